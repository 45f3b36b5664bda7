"""Durable file writes for tool state: a crash or power cut leaves the old file or the new one."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from patchkeeper.install.system.liveness import provably_gone
from patchkeeper.model import exitcodes
from patchkeeper.model.errors import PatchkeeperError, environment_problem, is_environment_error


def atomic_write(path: Path, data: bytes, *, then_sync_folder: bool = True) -> None:
    """Write DATA to PATH via a synced temp file and a rename, then sync the folder (unless
    the caller syncs it once after several writes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _refuse_other_than_a_file(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)  # a disk-full write leaves no half file behind
        if isinstance(exc, OSError) and is_environment_error(exc):
            raise environment_problem(exc, path, undone=True) from None
        raise
    if then_sync_folder:
        sync_folder(path.parent)  # the rename itself must survive a power cut too


def _refuse_other_than_a_file(path: Path) -> None:
    """The rename replaces whatever PATH is: never a device, a FIFO or a folder (as root, a
    file renamed over /dev/null takes the device's place for every program)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise PatchkeeperError(f"{path}: not a regular file; nothing written", exitcodes.USAGE)


_TEMP = re.compile(r"\..+\.(\d+)\.tmp")  # atomic_write's temporary name: .NAME.PID.tmp


def remove_dead_temps(folder: Path) -> None:
    """Remove the temporary files `atomic_write` left under FOLDER in a process that was
    killed mid-write (its pid gone): a live writer's are left alone."""
    for path in folder.rglob(".*.tmp"):
        match = _TEMP.fullmatch(path.name)
        if match is None:
            continue
        if not provably_gone(int(match[1])):
            continue  # its writer lives (or is another user's: not ours to judge)
        with contextlib.suppress(OSError):
            path.unlink()


WRITERS = 8  # threads that write (and fsync) at once


T = TypeVar("T")


def side_by_side(items: Sequence[T], work: Callable[[T], object]) -> None:
    """WORK on each of ITEMS in up to WRITERS threads (this one among them), so the disk
    serves their fsyncs together rather than one after the other. The first failure is raised,
    in the caller's thread, once all have ended."""
    failed: list[BaseException] = []

    def run(share: Sequence[T]) -> None:
        try:
            for item in share:
                work(item)
        except BaseException as exc:  # raised below, in the caller's thread
            failed.append(exc)

    shares = [items[k::WRITERS] for k in range(min(WRITERS, len(items)))]
    threads = [threading.Thread(target=run, args=(share,)) for share in shares[1:]]
    for thread in threads:
        thread.start()
    if shares:
        run(shares[0])
    for thread in threads:
        thread.join()
    if failed:
        raise failed[0]


def atomic_write_all(files: Mapping[Path, bytes]) -> None:
    """`atomic_write` of each of FILES, side by side; no folder is synced (the caller syncs
    each once, after)."""
    side_by_side(list(files.items()), lambda item: atomic_write(*item, then_sync_folder=False))


def sync_folder(folder: Path) -> None:
    """fsync FOLDER, so the renames and unlinks in it survive a power cut (a file: its data)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
