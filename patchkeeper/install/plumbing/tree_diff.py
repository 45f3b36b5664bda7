"""Two trees' raw diff as git lists it (`git diff-tree -r`, no renames), one `Listed` per path:
what the work tree writer, the snapshot and set-aside pass between them instead of asking git
again."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from patchkeeper.install.plumbing import git

# One path of a raw tree diff: (path, old mode, new mode, old blob, new blob); an absent
# side has mode 000000 and the all-zero id, as `git diff-tree --raw` says it.
Listed = tuple[str, str, str, str, str]


def list_tree_diff(
    repo: Path,
    old_tree: str,
    new_tree: str,
    paths: Iterable[str] = (),
    *,
    env: Mapping[str, str] | None = None,
) -> list[Listed]:
    """Each path where OLD_TREE and NEW_TREE differ (limited to PATHS when given), in git's
    order: one `git diff-tree -r`, no renames."""
    limit = ["--", *paths] if paths else []
    args = ["diff-tree", "-r", "-z", "--no-renames", old_tree, new_tree, *limit]
    fields = git.run(args, repo, env=env).stdout.split(b"\0")
    listed: list[Listed] = []
    for header, name in zip(fields[0::2], fields[1::2], strict=False):
        if header.startswith(b":"):
            old_mode, new_mode, old_sha, new_sha, _ = header[1:].decode().split(" ")
            path = name.decode(errors="surrogateescape")
            listed.append((path, old_mode, new_mode, old_sha, new_sha))
    return listed


def reversed_diff(listed: Sequence[Listed]) -> list[Listed]:
    """LISTED from the other side: the diff of the same two trees, NEW to OLD (the same
    paths, in the same order: git orders a diff by path, whichever side it starts from)."""
    return [(path, new_mode, old_mode, new, old) for path, old_mode, new_mode, old, new in listed]
