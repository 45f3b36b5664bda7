"""`patchkeeper record NAME --path P`: capture the current changes to paths as a new patch."""

from __future__ import annotations

from pathlib import Path

import click

from patchkeeper.commands.common import (
    install_option,
    json_option,
    open_workspace,
    patches_option,
    wait_option,
)
from patchkeeper.engine.patch_writer import record_patch
from patchkeeper.install.checkout.install import install_version
from patchkeeper.install.locks.install_lock import InstallLock
from patchkeeper.install.workspace import locked_for_writing, refuse_bundled_set
from patchkeeper.model import exitcodes
from patchkeeper.report.render import emit_json
from patchkeeper.report.tree import render_written, written_json


def settled_notes(lock: InstallLock) -> tuple[list[str], int]:
    """What the lock's undo of an interrupted tree write did, as notes, and the exit code it
    asks for: 5 when a file the user changed since was parked (refs/patchkeeper/interrupted/)."""
    if lock.settled is None:
        return [], exitcodes.OK
    kept = exitcodes.ATTENTION if lock.settled.kept else exitcodes.OK
    return [lock.settled.describe()], kept


@click.command("record")
@click.argument("name")
@click.option(
    "--path", "paths", multiple=True, required=True, help="A path to capture (repeatable)."
)
@click.option("-m", "--message", required=True, help="The Description header.")
@install_option
@patches_option
@wait_option
@json_option
def command(
    name: str,
    paths: tuple[str, ...],
    message: str,
    install_path: Path | None,
    patches_dir: Path | None,
    wait: float,
    as_json: bool,
) -> int:
    """Capture the current changes to PATHs as patch NAME and add it to series.

    The header is filled in: Description from -m, Base = HEAD, Last-Update = today, and
    Applies-To = open-ended from the current minor release (>=0.21 for 0.21.5). Changes of
    other patches in the same files stay out of it. It runs [install] version_command (or a
    `command` version source, when set) for that version.

    \b
    Example:
      patchkeeper record ledger-wal-tuning --path hermes_cli/sqlite_util.py \\
          -m "Checkpoint the ledger WAL less often"
    """
    workspace = open_workspace(install_path, patches_dir)
    refuse_bundled_set(workspace, "record")
    with locked_for_writing(workspace, "record", wait) as lock:
        version = install_version(workspace.install, workspace.settings)
        written = record_patch(
            workspace.install, workspace.patch_set, version, name, paths, message
        )
    notes, code = settled_notes(lock)
    notes.append(  # exit 0 of status and update needs every fix proven (docs/concepts.md)
        f"{name} names no smoke check yet: add `Smoke: CHECK` (smoke/CHECK.py) or "
        f"`Smoke: none (WHY)` to {written}; until then status says it is not proven"
    )
    if as_json:
        document = written_json(workspace, version, name, written, "recorded", notes)
        emit_json("record", code, **document)
    else:
        render_written(f"recorded {written} and added it to series", notes)
    return code
