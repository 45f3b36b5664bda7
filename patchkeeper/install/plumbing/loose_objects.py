"""Whether a blob git found nowhere before has been written since, and what a blob git wrote
holds: no git process.

A scratch index with private objects (scratch_index.py) has git write every object it makes
into its own folder, as loose objects (`git apply` never packs), the install's store being a
read-only alternate. So for a blob id (or prefix) that `cat-file --batch` answered "missing"
(no object of any store matched it; not "ambiguous"), the objects that can match it since
are in that folder only: one loose file there whose name starts with it, holding a blob,
means git would now find that blob, and no such file means it would still find none.

Only what the folder says for sure is answered (`gitformat-loose`: `xx/yyyy...`, a zlib
stream starting with "blob SIZE\\0"); anything else (a pack there, several matches, another
type, an unreadable file) is None, and the caller asks git. The same holds for reading a
blob by its full id (`loose_blob`): the content of a loose file of that name whose header
says "blob" and whose size is the one it states, else None.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

from patchkeeper.install.plumbing.index_file import entry_ids

_HEX = frozenset("0123456789abcdef")


def written_blob(objects: Path, prefix: str) -> bool | None:
    """Whether OBJECTS (a private object folder) holds exactly one loose blob whose id
    starts with PREFIX (True), none at all (False), or None when git must be asked."""
    if len(prefix) < 4 or not _HEX.issuperset(prefix):
        return None
    try:
        if any(name.endswith(".pack") for name in os.listdir(objects / "pack")):
            return None
    except FileNotFoundError:
        pass
    except OSError:
        return None
    folder = objects / prefix[:2]
    rest = prefix[2:]
    try:
        names = [n for n in os.listdir(folder) if n.startswith(rest) and _HEX.issuperset(n)]
    except FileNotFoundError:
        return False
    except OSError:
        return None
    if not names:
        return False
    if len(names) > 1:
        return None  # ambiguous to git, unless its settings say how to choose: git decides
    try:
        head = _header(folder / names[0])
    except (OSError, zlib.error):
        return None
    return True if head.startswith(b"blob ") else None


def _header(path: Path) -> bytes:
    """The first bytes of the loose object at PATH once inflated (its "TYPE SIZE" header):
    read a block at a time, since a deflate stream's tables may come before any byte."""
    inflate = zlib.decompressobj()
    head = b""
    with open(path, "rb") as stream:
        while len(head) < 16 and (block := stream.read(4096)):
            head += inflate.decompress(block, 16 - len(head))
    return head


def loose_blob(objects: Path, blob: str) -> bytes | None:
    """The content of blob BLOB (a full id) when OBJECTS holds it as a loose object that reads
    whole as one; None when it does not (it may be in another store: the caller asks git)."""
    if len(blob) not in (40, 64) or not _HEX.issuperset(blob):
        return None
    try:
        with open(objects / blob[:2] / blob[2:], "rb") as stream:
            inflate = zlib.decompressobj()
            data = inflate.decompress(stream.read())
    except (OSError, zlib.error):
        return None
    head, nul, content = data.partition(b"\0")
    kind, _, size = head.partition(b" ")
    if not nul or kind != b"blob" or not inflate.eof or size != str(len(content)).encode():
        return None
    return content


def written_blobs(
    objects: Path | None, index_file: Path, id_bytes: int, paths: list[str]
) -> dict[str, bytes]:
    """Those of PATHS whose stage-0 entry in INDEX_FILE (a scratch index) names a loose blob
    of OBJECTS (its private objects), with that blob's content: what `cat-file blob :PATH`
    would answer. The others (an upstream blob, no entry, an index this does not read) are
    left to git. Without OBJECTS or PATHS the index is not read."""
    if objects is None or not paths:
        return {}
    try:
        ids = entry_ids(index_file.read_bytes(), id_bytes) or {}
    except OSError:  # no index yet, or unreadable: git answers
        return {}
    found = {}
    for path in paths:
        if (blob := ids.get(path)) and (content := loose_blob(objects, blob)) is not None:
            found[path] = content
    return found
