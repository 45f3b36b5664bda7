"""Putting paths in place durably: each new content staged in a temporary file beside its path,
synced, and renamed over the old one, so no path is ever missing or half written.

The writing half of the work tree writer (writer/write.py), used by it for a whole write
(`put_all`) and by `settle` (writer/settle.py) to put one path back (`put`). A deletion is an
unlink, a mode change a chmod, a symlink is made at the temporary name and renamed too. The
temporary name (`.patchkeeper-ID-K`) is the write's id and the path's number in its journal, so
`settle` finds and removes what a kill left behind. The fsyncs run on a few threads at once: the
disk serves them together.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

from patchkeeper.install.records.update_journal import checkpoint
from patchkeeper.install.system.durable import side_by_side, sync_folder
from patchkeeper.install.writer.changes import EXECUTABLE, SYMLINK, Change
from patchkeeper.model.errors import environment_problem


def temp_name(write_id: str, number: int) -> str:
    return f".patchkeeper-{write_id}-{number}"


def _prune_empty(root: Path, folder: Path) -> None:
    """Remove FOLDER and its parents while empty, as git does when a file goes."""
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def _only_mode(change: Change) -> bool:
    """Same bytes, another executable bit: a chmod, which is atomic by itself."""
    return (
        change.old == change.new
        and change.old_mode not in (None, SYMLINK)
        and change.new_mode not in (None, SYMLINK)
    )


def _stage(root: Path, change: Change, temp: str) -> Path | None:
    """Write CHANGE's new content to the temporary file TEMP beside its path (not synced);
    None when no content is written (a deletion, a mode change)."""
    if change.new_mode is None or _only_mode(change):
        return None
    assert change.new is not None
    target = root / change.path
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = target.parent / temp
    with contextlib.suppress(FileNotFoundError):
        os.unlink(scratch)  # a leftover of an earlier, killed attempt
    try:
        if change.new_mode == SYMLINK:
            os.symlink(os.fsdecode(change.new), scratch)
            return scratch
        mode = 0o777 if change.new_mode == EXECUTABLE else 0o666
        fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
        try:
            view = memoryview(change.new)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(scratch)
        raise
    return scratch


def _commit(root: Path, change: Change, staged: Path | None) -> None:
    """Put CHANGE in place in one step: the rename of its staged file, an unlink, a chmod."""
    target = root / change.path
    if change.new_mode is None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(target)
        _prune_empty(root, target.parent)
    elif staged is None:
        os.chmod(target, (0o777 if change.new_mode == EXECUTABLE else 0o666) & ~_umask())
    else:
        os.replace(staged, target)


def _sync(paths: Iterable[Path]) -> None:
    """fsync each of PATHS (files or folders), side by side: the disk serves them together.
    The first failure is raised once all have ended."""
    side_by_side(list(paths), sync_folder)


def put(root: Path, change: Change, temp: str) -> None:
    """One path from its old state to its new one: staged, synced, put in place."""
    staged = _stage(root, change, temp)
    try:
        if staged is not None and not staged.is_symlink():
            sync_folder(staged)
        _commit(root, change, staged)
    except BaseException:
        if staged is not None:
            with contextlib.suppress(OSError):
                os.unlink(staged)
        raise


_UMASK: list[int] = []


def _umask() -> int:
    if not _UMASK:
        current = os.umask(0o022)
        os.umask(current)
        _UMASK.append(current)
    return _UMASK[0]


def put_all(root: Path, changes: list[Change], write_id: str) -> None:
    """Write CHANGES: every new content to its temporary file first, all synced, and only then
    each put in place, deletions first (a file may give way to a folder, or the reverse). A
    failure before the first rename leaves the tree untouched; after, what was put in place
    is undone; either way it is raised, naming the path."""
    order = sorted(range(len(changes)), key=lambda k: (changes[k].new_mode is not None, k))
    staged: dict[int, Path] = {}
    later: set[int] = set()  # its folder is in the way of a file that goes first
    number = order[0]
    try:
        for number in order:
            try:
                if (
                    path := _stage(root, changes[number], temp_name(write_id, number))
                ) is not None:
                    staged[number] = path
            except (NotADirectoryError, FileExistsError):
                later.add(number)
        _sync(path for path in staged.values() if not path.is_symlink())
    except OSError as exc:
        for path in staged.values():
            with contextlib.suppress(OSError):
                os.unlink(path)
        raise environment_problem(exc, root / changes[number].path, undone=True) from None
    done: list[int] = []
    try:
        for number in order:
            temp = temp_name(write_id, number)
            if number in later:
                put(root, changes[number], temp)
            else:
                # Popped once in place: a rename that fails leaves it staged, so it goes below.
                _commit(root, changes[number], staged.get(number))
                staged.pop(number, None)
            done.append(number)
            checkpoint(f"write.{len(done)}")  # tests: die like a power cut after K paths
    except OSError as exc:
        path = changes[number].path
        for left in staged.values():
            with contextlib.suppress(OSError):
                os.unlink(left)
        try:
            for undo in reversed(done):
                put(root, changes[undo].reversed(), temp_name(write_id, undo))
        except OSError:
            raise environment_problem(exc, root / path, undone=False) from None
        raise environment_problem(exc, root / path, undone=True) from None
