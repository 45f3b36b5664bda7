"""What set-aside asks of trees, told from one raw tree diff: the entry (mode, blob) of each
changed path, and whether each is exactly what a recorded diff made of HEAD's entry."""

from __future__ import annotations

from collections.abc import Sequence

from patchkeeper.install.plumbing.tree_diff import Listed

Entry = tuple[str, str] | None  # (mode, blob) of a path in a tree, None where it is absent
_FILE_MODES = {"100644", "100755"}


def tree_changes(listed: Sequence[Listed]) -> dict[str, tuple[Entry, Entry]]:
    """Each path of LISTED (two trees' diff: tree_diff.list_tree_diff), with its entry on
    either side."""
    return {
        path: (_entry(old_mode, old_sha), _entry(new_mode, new_sha))
        for path, old_mode, new_mode, old_sha, new_sha in listed
    }


def _entry(mode: str, sha: str) -> Entry:
    return None if set(mode) == {"0"} else (mode, sha)


def written_exactly(
    sections: list[tuple[str, bytes, list[bytes]]], changed: dict[str, tuple[Entry, Entry]]
) -> bool:
    """Whether each changed path is what one recorded diff section made of HEAD's entry,
    told by the full blob ids and modes of the section's header; any other header (a path
    two records touch, a mode change alone, a rename) says no, and the diffs are applied."""
    seen: set[str] = set()
    for path, header, _ in sections:
        if path in seen:
            return False
        seen.add(path)
        sides = _header_sides(header)
        if sides is None or changed.get(path) != sides:
            return False
    return seen == set(changed)


def modes_of_yours(
    sections: list[tuple[str, bytes, list[bytes]]], changed: dict[str, tuple[Entry, Entry]]
) -> dict[str, str]:
    """The files whose mode in the snapshot is not the one their latest recorded section
    (SECTIONS, latest first) left: a `chmod` of yours on a patched file. `git apply --reverse`
    puts the section's own mode back, so without this the edit would read as none."""
    yours: dict[str, str] = {}
    seen: set[str] = set()
    for path, header, _ in sections:
        if path in seen:
            continue
        seen.add(path)
        sides, now = _header_sides(header), changed.get(path, (None, None))[1]
        after = sides[1] if sides is not None else None
        if after is not None and now is not None and {now[0], after[0]} == _FILE_MODES:
            yours[path] = now[0]  # the executable bit alone: a symlink's is a content change
    return yours


def _header_sides(header: bytes) -> tuple[Entry, Entry] | None:
    """(before, after) of a `git diff --full-index` file header, or None when it does not
    name both sides' blobs and modes."""
    modes: dict[str, str] = {}
    blobs: tuple[str, str] | None = None
    for raw in header.split(b"\n")[1:]:
        line = raw.decode(errors="surrogateescape")
        word, _, rest = line.partition(" ")
        if line.startswith(("--- ", "+++ ")) or not line:
            continue
        if word == "index":
            ids, _, mode = rest.partition(" ")
            old_sha, _, new_sha = ids.partition("..")
            if len(old_sha) < 40 or len(old_sha) != len(new_sha):
                return None
            blobs = (old_sha, new_sha)
            if mode:
                modes.setdefault("old", mode)
                modes.setdefault("new", mode)
        elif line.startswith(("new file mode ", "deleted file mode ", "old mode ", "new mode ")):
            side = "old" if line.startswith(("deleted", "old")) else "new"
            modes[side] = line.rsplit(" ", 1)[1]
        else:
            return None  # rename, copy, similarity, binary without ids: not told by header
    if blobs is None:
        return None
    zero = "0" * len(blobs[0])
    before = None if blobs[0] == zero else (modes.get("old", ""), blobs[0])
    after = None if blobs[1] == zero else (modes.get("new", ""), blobs[1])
    if (before is not None and not before[0]) or (after is not None and not after[0]):
        return None
    return before, after
