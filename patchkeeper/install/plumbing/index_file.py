"""The blob ids a scratch index holds, read from its file: no git process.

A scratch index (scratch_index.py) is saved as a copy of its file before each step that may be
undone; the ids of its entries in that copy say which content a path had then, so what was
there before a step and what is there after it can be read in one `cat-file --batch`.

Only what git's own format says for sure is read (`gitformat-index`: version 2 or 3, entries
of a fixed size, the path NUL-padded to eight bytes); anything else (version 4's compressed
paths, a size that does not add up) is None, and the caller asks git.
"""

from __future__ import annotations

_FIXED = 40  # ctime, mtime, dev, ino, mode, uid, gid, size: ten 32-bit fields
_EXTENDED = 0x4000
_NAME_LENGTH = 0x0FFF


def entry_ids(data: bytes | None, id_bytes: int) -> dict[str, str] | None:
    """Path -> blob id (hex) of every stage-0 entry of index file DATA, whose ids are
    ID_BYTES long (20: SHA-1, 32: SHA-256); None when DATA is not an index this reads."""
    if id_bytes not in (20, 32) or data is None or len(data) < 12 or data[:4] != b"DIRC":
        return None
    version = int.from_bytes(data[4:8], "big")
    if version not in (2, 3):
        return None
    found: dict[str, str] = {}
    at = 12
    for _ in range(int.from_bytes(data[8:12], "big")):
        flags_at = at + _FIXED + id_bytes
        if flags_at + 2 > len(data):
            return None
        flags = int.from_bytes(data[flags_at : flags_at + 2], "big")
        name_at = flags_at + 2
        if flags & _EXTENDED:
            if version < 3:
                return None
            name_at += 2
        end = data.find(b"\0", name_at)
        if end < 0 or (flags & _NAME_LENGTH) != min(end - name_at, _NAME_LENGTH):
            return None
        if not (flags >> 12) & 3:
            name = data[name_at:end].decode(errors="surrogateescape")
            found[name] = data[at + _FIXED : flags_at].hex()
        at += (end - at + 8) & ~7  # the entry and its 1 to 8 NULs: a multiple of eight
    return found
