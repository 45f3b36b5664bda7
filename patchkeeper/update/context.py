"""What every phase of one update works with (RunContext): the workspace, the options, the
journal, the report so far, and where progress is said. The phases are functions of it."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from patchkeeper.install.checkout.install import Install
from patchkeeper.install.locks.install_lock import InstallLock
from patchkeeper.install.records import update_journal as jr
from patchkeeper.install.workspace import Workspace
from patchkeeper.model import nextstep
from patchkeeper.update.report import UpdateReport

if TYPE_CHECKING:
    from patchkeeper.install.plumbing.work_tree_snapshot import Dirty
    from patchkeeper.leftovers.find import Leftover

DEFAULT_TIMEOUT = 3600.0


@dataclass
class UpdateOptions:
    """What `update` was asked for on its command line."""

    args: tuple[str, ...] = ()
    timeout: float | None = None
    preview: str | None = None
    force: bool = False
    as_json: bool = False


@dataclass
class RunContext:
    """One update's inputs (workspace, lock, options, journal) and its report so far."""

    ws: Workspace
    lock: InstallLock
    options: UpdateOptions
    journal: jr.Journal
    report: UpdateReport
    # Progress and the updater's output go to stderr, in text mode too: stdout carries only
    # the report (or the JSON document), never mixed with them.
    sink: BinaryIO = field(default_factory=lambda: sys.stderr.buffer)
    resumed: bool = False  # True when `recover` finishes a run another process started
    # The refs of earlier updates that preflight found (None: not looked for in this process)
    set_aside_before: list[Leftover] | None = None
    # What differs from HEAD, as `git status` said just before phase 3 (set_aside.survey)
    dirty: Dirty | None = None

    @property
    def install(self) -> Install:
        return self.ws.install

    @property
    def state_dir(self) -> Path:
        return self.ws.install.state_dir

    @property
    def timeout(self) -> float:
        """Seconds the updater, or a post-apply command, may run."""
        return self.options.timeout or self.ws.settings.update_timeout or DEFAULT_TIMEOUT

    def say(self, line: str) -> None:
        self.sink.write(f"patchkeeper: {line}\n".encode())
        self.sink.flush()


def retry_command(workspace: Workspace, options: UpdateOptions) -> str:
    """The command that runs this update again, as it was asked for."""
    words: list[str] = ["update"]
    if options.preview:
        words += ["--preview", options.preview]
    if options.timeout:
        words += ["--timeout", f"{options.timeout:g}"]
    return nextstep.command(
        *words, install=workspace.install.path, patches=workspace.patch_set.root, rest=options.args
    )
