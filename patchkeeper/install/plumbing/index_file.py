"""Blob ids read from a git index file's bytes, so that the content of two states of a scratch
index can be asked of one `git cat-file --batch` (`read_beside`: the state kept as bytes by
`ScratchIndex.save` is read here, the other by its `:PATH` names).

Index versions 2 and 3 are read (git's own layout: a 12-byte header, entries padded to 8
bytes, extensions, a trailing hash of 20 or 32 bytes, tried in turn and held to the file's
own length). Anything else is None and the caller asks git as before: version 4's
compressed paths, a split index (`link`) or a sparse one (`sdir`), whose entries live partly
elsewhere, or bytes that do not read cleanly.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from patchkeeper.install.plumbing.scratch_index import ScratchIndex

_HASH_SIZES = (20, 32)  # SHA-1, SHA-256 repositories
_STAT_SIZE = 40  # ctime, mtime, dev, ino, mode, uid, gid, size: ten 32-bit fields
_EXTENDED = 0x4000
_NAME_MASK = 0xFFF
_ELSEWHERE = (b"link", b"sdir")  # extensions meaning some entries are not in this file


def read_beside(
    index: ScratchIndex, saved: tuple[bytes | None, str | None], paths: list[str]
) -> tuple[dict[str, bytes], dict[str, bytes]] | None:
    """PATHS' content in SAVED (a state `index.save()` returned) and in INDEX as it is now,
    in one process; None when SAVED's blob ids cannot be read from its bytes or a path
    cannot be asked so (the caller then reads each state on its own)."""
    if saved[0] is None or any("\n" in path for path in paths):
        return None
    ids = blob_ids(saved[0], paths)
    if ids is None:
        return None
    found = index.read_blobs([*(f":{path}" for path in paths), *dict.fromkeys(ids.values())])
    then = {path: found[sha] for path, sha in ids.items() if sha in found}
    return then, {path: found[f":{path}"] for path in paths if f":{path}" in found}


def blob_ids(data: bytes, paths: Collection[str]) -> dict[str, str] | None:
    """PATHS' object ids at stage 0 in the index file DATA (a path it does not hold is left
    out), or None when DATA is not an index read cleanly here."""
    if len(data) < 12 or data[:4] != b"DIRC":
        return None
    version = int.from_bytes(data[4:8], "big")
    count = int.from_bytes(data[8:12], "big")
    if version not in (2, 3):
        return None
    wanted = {path.encode(errors="surrogateescape"): path for path in paths}
    for size in _HASH_SIZES:
        found = _entries(data, count, size, version, wanted)
        if found is not None:
            return found
    return None


def _entries(
    data: bytes, count: int, size: int, version: int, wanted: dict[bytes, str]
) -> dict[str, str] | None:
    found: dict[str, str] = {}
    at = 12
    for _ in range(count):
        flags_at = at + _STAT_SIZE + size
        name_at = flags_at + 2
        if name_at > len(data):
            return None
        flags = int.from_bytes(data[flags_at:name_at], "big")
        if flags & _EXTENDED:
            if version < 3:
                return None
            name_at += 2
        end = data.find(b"\0", name_at)
        if end < 0:
            return None
        name = data[name_at:end]
        if (flags & _NAME_MASK) not in (len(name), _NAME_MASK):
            return None
        following = at + ((name_at - at + len(name) + 8) & ~7)
        if following > len(data) or data[end:following].strip(b"\0"):
            return None
        if (flags >> 12) & 3 == 0 and name in wanted:
            found[wanted[name]] = data[at + _STAT_SIZE : flags_at].hex()
        at = following
    trailer = len(data) - size
    while at < trailer:  # extensions: a 4-byte signature, a 4-byte length, the body
        if at + 8 > trailer or data[at : at + 4] in _ELSEWHERE:
            return None
        at += 8 + int.from_bytes(data[at + 4 : at + 8], "big")
    return found if at == trailer else None
