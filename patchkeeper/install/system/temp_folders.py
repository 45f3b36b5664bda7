"""patchkeeper's own temporary folders (scratch indexes, private object stores, a copy of the
index): made where tempfile would make them, removed with all they hold, and a folder that
cannot be removed is one warning line on stderr, never a traceback and never a change of exit
code. A leftover temporary folder holds nothing of the user's: every command says so the same
way, whether the folder goes at the end of a `with` or when nothing refers to it any more.

Made with `os.mkdir` rather than `tempfile`: importing tempfile (shutil, random and the
archive modules behind them) costs more than a small `check` spends in git.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the queue is made by the first background removal
    import queue


def new_folder(prefix: str) -> Path:
    """A folder of its own, readable by this user only, in the first of tempfile's places that
    takes one: $TMPDIR, $TEMP, $TMP, /tmp, /var/tmp, /usr/tmp, the current folder (absolute)."""
    names = [os.environ.get(name) for name in ("TMPDIR", "TEMP", "TMP")]
    refusals: list[OSError] = []  # none takes one: the first place's refusal is raised
    for parent in [p for p in names if p] + ["/tmp", "/var/tmp", "/usr/tmp", os.curdir]:
        try:  # absolute: git runs in the install, not here
            return _folder_in(Path(os.path.abspath(parent)), prefix)
        except OSError as refused:
            refusals.append(refused)
    raise refusals[0]


def _folder_in(parent: Path, prefix: str) -> Path:
    while True:
        folder = parent / f"{prefix}{os.urandom(6).hex()}"
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue
        return folder


def _raise(error: OSError) -> None:
    raise error


def _remove_all(folder: Path) -> None:
    """Remove FOLDER and all it holds (git's object files are read-only: unlinked all the
    same, the folders being ours; a symlink to a folder is unlinked, not followed); nothing
    when it is gone already. The first refusal is raised."""
    if not os.path.lexists(folder):
        return
    for parent, folders, files in os.walk(folder, topdown=False, onerror=_raise):
        for name in files:
            with suppress(FileNotFoundError):
                os.unlink(os.path.join(parent, name))
        for name in folders:
            path = os.path.join(parent, name)
            with suppress(FileNotFoundError):
                if os.path.islink(path):
                    os.unlink(path)
                else:
                    os.rmdir(path)
    with suppress(FileNotFoundError):
        os.rmdir(folder)


def remove_folder(folder: Path) -> None:
    """Remove FOLDER (see `_remove_all`); when the machine refuses, say so in one line on
    stderr and go on: the command's result does not depend on its temporary files."""
    try:
        _remove_all(folder)
    except OSError as exc:
        inside = os.fsdecode(exc.filename or folder).removeprefix(f"{folder}/")
        where = "" if inside == str(folder) else f": {inside}"
        _say_kept(folder, f"{exc.strerror or exc}{where}")


def _say_kept(folder: Path, why: str) -> None:
    with suppress(OSError, ValueError):  # stderr closed or full: nothing more to say
        sys.stderr.write(
            f"patchkeeper: warning: could not remove the temporary folder {folder} "
            f"({why}); it holds nothing of yours: remove it by hand\n"
        )
        sys.stderr.flush()


_LATER: list[queue.Queue[Path]] = []  # the folders the remover thread takes, once started


def remove_in_background(folder: Path) -> None:
    """Remove FOLDER (`remove_folder`) in a thread while the command goes on: removing
    costs what the file system makes of each folder in it (git's object folders: up to 256,
    1-3 ms each on a busy disk), time the command spends on its answer meanwhile. The process
    waits for every such removal before it exits (an exit hook), so nothing is left behind,
    and a folder that cannot be removed is the same one warning line."""
    if not _LATER:
        import atexit
        import queue
        import threading

        _LATER.append(queue.Queue())
        worker = threading.Thread(target=_remover, args=(_LATER[0],), daemon=True)
        worker.start()
        atexit.register(_LATER[0].join)
    _LATER[0].put(folder)


def _remover(folders: queue.Queue[Path]) -> None:
    """Remove each folder put in FOLDERS, in turn, for as long as the process lives. Whatever
    one removal raises, the ones after it are still done: the exit waits for them all."""
    while True:
        folder = folders.get()
        try:
            remove_folder(folder)  # a refusal of the machine is its warning line
        except Exception as exc:  # anything else: said the same way, never a stuck exit
            _say_kept(folder, str(exc))
        finally:
            folders.task_done()


@contextmanager
def temporary_folder(prefix: str = "patchkeeper-") -> Iterator[Path]:
    """A new folder (`new_folder`), removed at the end of the `with` (`remove_folder`)."""
    folder = new_folder(prefix)
    try:
        yield folder
    finally:
        remove_folder(folder)
