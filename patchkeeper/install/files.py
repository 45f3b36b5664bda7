"""Durable file writes for tool state: a crash or power cut leaves the old file or the new one."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path

from patchkeeper.model.errors import environment_problem, is_environment_error


def atomic_write(path: Path, data: bytes, *, then_sync_folder: bool = True) -> None:
    """Write DATA to PATH via a synced temp file and a rename, then sync the folder (unless
    the caller syncs it once after several writes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
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


WRITERS = 8  # threads that write (and fsync) at once


def atomic_write_all(files: Mapping[Path, bytes]) -> None:
    """`atomic_write` of each of FILES, side by side, so the disk serves their fsyncs together
    rather than one after the other; no folder is synced (the caller syncs each once, after).
    The first failure is raised once all have ended."""
    items = list(files.items())
    failed: list[BaseException] = []

    def write(share: list[tuple[Path, bytes]]) -> None:
        try:
            for path, data in share:
                atomic_write(path, data, then_sync_folder=False)
        except BaseException as exc:  # raised below, in the caller's thread
            failed.append(exc)

    shares = [items[k::WRITERS] for k in range(min(WRITERS, len(items)))]
    threads = [threading.Thread(target=write, args=(share,)) for share in shares[1:]]
    for thread in threads:
        thread.start()
    if shares:
        write(shares[0])
    for thread in threads:
        thread.join()
    if failed:
        raise failed[0]


def sync_folder(folder: Path) -> None:
    """fsync FOLDER, so the renames and unlinks in it survive a power cut (a file: its data)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
