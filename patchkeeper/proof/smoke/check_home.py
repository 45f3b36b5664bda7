"""The scratch folder each running check gets for its HOME, HERMES_HOME and TMPDIR.

Those folders are made under the install's `.git/patchkeeper/smoke/`, not in $TMPDIR, and
removed when the check ends; a run killed before it could remove them leaves them there, named
after its pid, and the next run clears them. Telling a dead run's folder from a live one's
(its pid, its start time, the check's process group) is the whole of this module.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from patchkeeper.install.system.liveness import group_alive, process_start_time
from patchkeeper.install.system.temp_folders import remove_folder

SCRATCH_DIR = "smoke"  # under the install's state dir: each running check's HOME and TMPDIR
GROUP_FILE = "group"  # in a check's scratch folder: its process group, while it may run


def _owner_prefix() -> str:
    """`PID-STARTTIME-`: whose a scratch folder is, so a later run can tell a dead one."""
    return f"{os.getpid()}-{process_start_time(os.getpid()) or ''}-"


def _folder_is_dead(folder: Path) -> bool:
    """A folder of a run that is gone (its pid ended, or was reused by another process) and
    whose check no longer runs either (a check can outlive a killed patchkeeper)."""
    pid, _, rest = folder.name.partition("-")
    started, _, _ = rest.partition("-")
    if not pid.isdigit():
        return False  # not ours
    if process_start_time(int(pid)) == started:
        return False  # its run is alive
    with contextlib.suppress(OSError, ValueError):
        if group_alive(int((folder / GROUP_FILE).read_text())):
            return False
    return True


def clear_dead_scratch(root: Path) -> list[Path]:
    """Remove the scratch folders of runs that were killed before they could (returns them)."""
    if not root.is_dir():
        return []
    dead = [folder for folder in root.iterdir() if folder.is_dir() and _folder_is_dead(folder)]
    for folder in dead:
        shutil.rmtree(folder, ignore_errors=True)
    return dead


@contextlib.contextmanager
def scratch_folder(root: Path | None, name: str) -> Iterator[Path]:
    """A fresh folder for one check, removed when it ends. Under ROOT (the install's state
    dir) when given and writable, named after this run, so that a run killed before it could
    remove it leaves nothing in $TMPDIR and the next run clears it; else a temp dir."""
    folder: Path | None = None
    if root is not None:
        try:
            root.mkdir(parents=True, exist_ok=True)
            folder = Path(tempfile.mkdtemp(prefix=f"{_owner_prefix()}{name}-", dir=root))
        except OSError:
            folder = None
    if folder is None:
        folder = Path(tempfile.mkdtemp(prefix=f"patchkeeper-smoke-{name}-"))
    try:
        yield folder
    finally:
        remove_folder(folder)
