"""A tree made from another by changing a few of its paths, at the cost of the folders on
their way: only those folders are read (one `cat-file --batch`) and written again (one
`git mktree --batch`); every other folder of the tree is kept by its id, never listed.

This is how the work tree's snapshot (plumbing/work_tree_snapshot.py) costs what changed, not the
size of the tree: git's own route (an index of every path, `write-tree`) reads and writes an entry
per file. The ids of the new trees are worked out here (the children's are needed before their
parents are written) and must be the ids `mktree` answers; any other answer is None, and the
caller takes git's own route.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from patchkeeper.install.plumbing import git
from patchkeeper.install.plumbing.tree_diff import Listed

Entry = tuple[str, str] | None  # (mode, object id) of a path in a tree; None: absent
_TREE = b"40000"
_KINDS = {b"40000": b"tree", b"160000": b"commit"}  # any other mode names a blob


@dataclass(frozen=True)
class Overlaid:
    """A tree made by `overlay`: BASE's tree id, the new tree's, and the raw diff between
    the two (`git diff-tree -r` of them, in git's order: what tree_diff.list_tree_diff
    would say, told from the entries read, no process)."""

    base: str
    tree: str
    listed: list[Listed]


def _folders(paths: list[str]) -> list[str]:
    """Every folder on the way to PATHS, the top (``""``) first."""
    found = {""}
    for path in paths:
        parts = path.split("/")[:-1]
        found.update("/".join(parts[:depth]) for depth in range(1, len(parts) + 1))
    return sorted(found, key=lambda folder: (folder.count("/") + bool(folder), folder))


def _parse(raw: bytes, width: int) -> dict[bytes, tuple[bytes, bytes]]:
    """A raw tree object: name -> (mode, binary object id)."""
    entries: dict[bytes, tuple[bytes, bytes]] = {}
    position = 0
    while position < len(raw):
        space = raw.index(b" ", position)
        nul = raw.index(b"\0", space)
        entries[raw[space + 1 : nul]] = (raw[position:space], raw[nul + 1 : nul + 1 + width])
        position = nul + 1 + width
    return entries


def _read(
    repo: Path, base: str, folders: list[str]
) -> tuple[str, dict[str, dict[bytes, tuple[bytes, bytes]] | None]] | None:
    """BASE's tree id and each of FOLDERS as it is in BASE (None: not there). None when a
    folder is something else in BASE (a file where a folder is wanted)."""
    names = [f"{base}^{{tree}}"] + [f"{base}:{folder}" for folder in folders[1:]]
    query = "".join(f"{name}\n" for name in names).encode(errors="surrogateescape")
    output = git.run(["cat-file", "--batch"], repo, stdin=query).stdout
    found: dict[str, dict[bytes, tuple[bytes, bytes]] | None] = {}
    position, root = 0, ""
    for folder in folders:
        header, position = git.batch_record(output, position, repo)
        if header.endswith(b" missing"):
            found[folder] = None
            continue
        sha, kind, size = header.decode().split(" ")
        content = git.batch_content(output, position, int(size), repo)
        position += int(size) + 1
        if kind != "tree":
            return None
        root = root or sha
        found[folder] = _parse(content, len(sha) // 2)
    return (root, found) if found.get("") is not None else None


def _serialize(entries: dict[bytes, tuple[bytes, bytes]]) -> bytes:
    """A tree object's body, its entries in git's order (a folder sorts as if its name
    ended in a slash)."""
    order = sorted(entries, key=lambda name: name + (b"/" if entries[name][0] == _TREE else b""))
    return b"".join(entries[name][0] + b" " + name + b"\0" + entries[name][1] for name in order)


def _listed(
    changes: Mapping[str, Entry], found: dict[str, dict[bytes, tuple[bytes, bytes]] | None]
) -> list[Listed]:
    """Each path of CHANGES whose entry is not the one FOUND (BASE's folders) holds, as a
    raw diff line, in git's order (the order of the paths' bytes)."""
    listed: list[Listed] = []
    zero_mode = "000000"
    for path in sorted(changes, key=lambda path: path.encode(errors="surrogateescape")):
        folder, _, name = path.rpartition("/")
        held = (found.get(folder) or {}).get(name.encode(errors="surrogateescape"))
        old = None if held is None else (held[0].decode().rjust(6, "0"), held[1].hex())
        new = changes[path]
        if old != new:
            zero = "0" * len((old or new or ("", ""))[1])
            old_mode, old_sha = old or (zero_mode, zero)
            new_mode, new_sha = new or (zero_mode, zero)
            listed.append((path, old_mode, new_mode, old_sha, new_sha))
    return listed


def overlay(repo: Path, base: str, changes: Mapping[str, Entry]) -> Overlaid | None:
    """The tree of BASE (a tree-ish) with each path of CHANGES set to its entry (None takes it
    out; a folder left empty goes too), written to REPO's object store. None when it cannot
    be made this way: a changed path inside another, a folder of BASE that is a file here, a
    tree that would be empty, or an id `mktree` does not confirm."""
    folders = _folders(list(changes))
    if any(folder in changes for folder in folders):
        return None  # a path inside another changed path
    read = _read(repo, base, folders)
    if read is None:
        return None
    root, found = read
    if not changes:
        return Overlaid(root, root, [])
    width = len(root) // 2
    digest = hashlib.sha1 if width == 20 else hashlib.sha256
    content = {folder: dict(found[folder] or {}) for folder in folders}
    for path, entry in changes.items():
        folder, _, name = path.rpartition("/")
        key = name.encode(errors="surrogateescape")
        if entry is None:
            content[folder].pop(key, None)
        else:
            content[folder][key] = (entry[0].encode(), bytes.fromhex(entry[1]))
    written: list[tuple[str, bytes]] = []  # (id, mktree input), the deepest first
    for folder in reversed(folders):
        entries = content[folder]
        parent, _, name = folder.rpartition("/")
        if entries == found[folder]:
            continue  # unchanged after all: BASE holds it, and its parent names it already
        if not entries:
            if not folder:
                return None  # every file taken out: left to git's own route
            content[parent].pop(name.encode(errors="surrogateescape"), None)
            continue
        body = _serialize(entries)
        sha = digest(b"tree %d\0" % len(body) + body).hexdigest()
        if folder:
            content[parent][name.encode(errors="surrogateescape")] = (_TREE, bytes.fromhex(sha))
        lines = b"".join(
            b"%s %s %s\t%s\0" % (mode, _KINDS.get(mode, b"blob"), oid.hex().encode(), entry_name)
            for entry_name, (mode, oid) in entries.items()
        )
        written.append((sha, lines + b"\0"))
    listed = _listed(changes, found)
    if not written:
        return Overlaid(root, root, listed)
    query = b"".join(lines for _, lines in written)
    made = git.run(["mktree", "-z", "--batch"], repo, stdin=query, check=False)
    if made.returncode != 0 or made.stdout.decode().split() != [sha for sha, _ in written]:
        return None
    return Overlaid(root, written[-1][0], listed)
