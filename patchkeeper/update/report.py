"""What an update found and did, phase by phase: the report `update` and `recover` print (as text
or JSON) and whose exit code they return."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from patchkeeper.install.checkout.install import Install
from patchkeeper.model import exitcodes
from patchkeeper.model import outcomes as oc

if TYPE_CHECKING:  # imported where used: only a --preview run checks a ref or fetches, and
    # only phase 6 writes the patch set (run.py: the later phases load on demand)
    from patchkeeper.engine.checking import RefReport
    from patchkeeper.engine.patching import TreeReport
    from patchkeeper.install.checkout.freshness import Freshness
    from patchkeeper.leftovers import find as lo


@dataclass
class PhaseRecord:
    """One phase of an update as it ran: done, skipped or failed, and how long."""

    number: int
    name: str
    status: str  # done, skipped, failed
    seconds: float = 0.0
    detail: str = ""


@dataclass
class CommandResult:
    """One external command (the upstream updater, a post-apply command)."""

    command: list[str]
    exit_status: int | None = None  # None: did not finish; negative: killed by that signal
    timed_out: bool = False
    error: str = ""
    seconds: float = 0.0
    tail: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.exit_status == 0 and not self.timed_out and not self.error

    def describe(self) -> str:
        if self.error:
            return self.error
        if self.timed_out:
            return f"timed out after {self.seconds:.0f}s; its process group was killed"
        if self.exit_status is not None and self.exit_status < 0:
            return f"killed by signal {-self.exit_status}"
        return f"exit {self.exit_status}"


@dataclass
class KeptFile:
    """A file of the user's edits kept aside, and the command that shows it."""

    path: str
    show: str  # command that shows the user's edit of the file


@dataclass
class RestoreResult:
    """What putting the user's edits back did: restored, kept aside."""

    ref: str | None
    restored: list[str] = field(default_factory=list)
    kept: list[KeptFile] = field(default_factory=list)
    command: str = ""  # merges the kept files in with conflict markers, for a person


@dataclass
class LeftoverAction:
    """What an update did with one leftover, and how to undo or finish it."""

    leftover: lo.Leftover
    action: str  # dropped, kept, found-before
    detail: str = ""
    backup_ref: str | None = None
    command: str = ""  # restore (kept) or undo (dropped)


@dataclass
class SmokeReport:
    """Phase 8's answer: the smoke checks' verdicts, or why none ran."""

    status: str  # not-run (phase 8 did not run), not-configured, pass, fail, error
    detail: str = ""
    checks: list[dict[str, str]] = field(default_factory=list)
    python: dict[str, Any] | None = None  # which interpreter ran them (smoke.interpreter_facts)
    action: str = ""  # when not a pass: what is missing and the command to run next


@dataclass
class UpdateReport:
    """Everything an update did and found, for the text and JSON reports and the exit code."""

    install: Install
    run_id: str
    head_before: str
    version_before: str
    head_after: str | None = None
    version_after: str | None = None
    # where each was read: the source that answered, why the others gave none (VersionInfo)
    version_before_from: str | None = None
    version_before_not_from: list[str] = field(default_factory=list)
    version_after_from: str | None = None
    version_after_not_from: list[str] = field(default_factory=list)
    phases: list[PhaseRecord] = field(default_factory=list)
    preview: RefReport | None = None
    preview_fetch: Freshness | None = None  # the fetch of a remote-tracking --preview ref
    upstream: CommandResult | None = None
    leftovers: list[LeftoverAction] = field(default_factory=list)
    tree: TreeReport | None = None
    restore: RestoreResult | None = None
    smoke: SmokeReport = field(default_factory=lambda: SmokeReport("not-run"))
    post: list[CommandResult] = field(default_factory=list)
    attention: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    finished: bool = False  # False: the journal stays for `recover`
    not_done: str = ""  # why the update asked for did not happen (or not all of it)
    rolled_back: bool = False  # the tree went back to the `before` snapshot on the old HEAD
    retry: str = ""  # the command that runs this update again
    patch_set: str = ""  # the set's folder and why it was used (Workspace.patch_set_label)

    @property
    def update_done(self) -> bool:
        return not self.not_done

    @property
    def patch_results(self) -> list[oc.PatchResult]:
        if self.tree is not None:
            return self.tree.results
        return self.preview.results if self.preview else []

    def exit_code(self) -> int:
        codes = [exitcodes.ATTENTION] if self.attention else []
        if any(r.needs_a_person for r in self.patch_results):
            codes.append(exitcodes.ATTENTION)
        if any(r.outcome in oc.FAILED for r in self.patch_results):
            codes.append(exitcodes.PATCH_FAILED)
        if self.smoke.status in ("fail", "error"):
            codes.append(exitcodes.SMOKE_FAILED)
        return exitcodes.worst(*codes)
