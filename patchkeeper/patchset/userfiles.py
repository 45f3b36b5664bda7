"""Files a user wrote, read safely: only regular files, never blocking, within a size; and the
paths a patch set may name inside a repository."""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

from patchkeeper.model.problems import Problem

MAX_SMALL_FILE_BYTES = 1 << 20  # series, patchkeeper.toml


SMOKE_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")  # a file in smoke/, no path


_NAME_MAX, _PATH_MAX = 255, 4000  # what file systems take: longer is not a path to write


_DRIVE_RE = re.compile(r"^[A-Za-z]:[\\/]")


_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
}


def read_user_file(path: Path | str, limit: int) -> tuple[bytes, str | None]:
    """PATH's bytes, or why it is not read: it must be a regular file (a symlink to one is
    fine) of at most LIMIT bytes. Never blocks: a FIFO is opened without waiting for a writer
    and refused; a device is refused before a byte is read."""
    return read_user_file_head(path, limit, None)


def read_user_file_head(
    path: Path | str, limit: int, enough: Callable[[bytes], int | None] | None, first: int = 1 << 20
) -> tuple[bytes, str | None]:
    """`read_user_file`, stopping early: ENOUGH(the bytes read so far) says where what the
    caller needs ends once it is in them (None: read on). The first read asks FIRST bytes,
    each next one twice as many, so a short header costs one read of a large file. Without
    ENOUGH, or when it never answers, the whole file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return b"", f"cannot read ({exc.strerror or exc})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = _KINDS.get(stat.S_IFMT(info.st_mode), "not a file")
            return b"", f"cannot read: not a regular file ({kind})"
        if info.st_size > limit:
            return b"", f"too large ({info.st_size} bytes; at most {limit})"
        chunks, size, ask = [], 0, first if enough is not None else 1 << 20
        while chunk := os.read(fd, ask):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:  # it grew while being read
                return b"", f"too large (more than {limit} bytes)"
            if enough is not None:
                data = b"".join(chunks) if len(chunks) > 1 else chunk
                if (end := enough(data)) is not None:
                    return data[:end], None
                chunks, ask = [data], min(ask * 2, 1 << 20)
        return b"".join(chunks), None
    except OSError as exc:
        return b"", f"cannot read ({exc.strerror or exc})"
    finally:
        os.close(fd)


@functools.lru_cache(maxsize=4096)
def unsafe_path(path: str) -> str | None:
    """Why PATH may not be written by a patch, or None when it is a safe relative path.
    Cached: the variants of a fix name the same few paths again and again."""
    if not path or path == "/dev/null":
        return None if path == "/dev/null" else "empty path"
    if path.startswith("/") or _DRIVE_RE.match(path):
        return "absolute path"
    # PurePosixPath's parts without a PurePosixPath: "" and "." are no parts (a leading
    # "/" from a backslash would be the root part, which no check below is about).
    parts = [part for part in path.replace("\\", "/").split("/") if part not in ("", ".")]
    if ".." in parts:
        return "path leaves the tree ('..')"
    if any(part.lower() == ".git" for part in parts):
        return "path inside .git/"
    if any(len(part.encode(errors="surrogateescape")) > _NAME_MAX for part in parts):
        return f"a file name longer than {_NAME_MAX} bytes"
    if len(path.encode(errors="surrogateescape")) > _PATH_MAX:
        return f"a path longer than {_PATH_MAX} bytes"
    return None


def unsafe_file(path: str) -> str | None:
    """Why PATH may not name a file of the repository; unlike in a diff, /dev/null is none."""
    return "absolute path" if path.startswith("/") else unsafe_path(path)


def utf8_text(path: Path, data: bytes) -> tuple[str, Problem | None]:
    """DATA, PATH's bytes, as text; a problem at the line of the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return "", Problem(path, line, f"not valid UTF-8 (byte 0x{data[exc.start]:02x})")
