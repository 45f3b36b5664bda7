"""What a tree write changes: one `Change` per path, read from two trees and from the disk.

The first step of the work tree writer (writer/write.py), kept apart because it only reads:
`changes_between` lists the paths two trees differ in, reads their new content from git's
object store and their old content from the work tree, and refuses (nothing written yet) when
the disk is not what the old tree says. `on_disk` is also how `settle` (writer/settle.py) tells,
after a kill, whether a path holds its old content, its new one, or someone else's.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchkeeper.install.plumbing import git
from patchkeeper.install.plumbing.tree_diff import Listed, list_tree_diff

FILE, EXECUTABLE, SYMLINK = "100644", "100755", "120000"
_GITLINK = "160000"
@dataclass(frozen=True)
class Change:
    """One path's old and new state; a mode of None means the path is absent."""

    path: str
    old_mode: str | None
    old: bytes | None
    new_mode: str | None
    new: bytes | None

    def reversed(self) -> Change:
        return Change(self.path, self.new_mode, self.new, self.old_mode, self.old)


def symlinked_folder(root: Path, path: str) -> str | None:
    """The first folder of PATH (under ROOT) that is a symbolic link, or None."""
    parts = Path(path).parts[:-1]
    for depth in range(1, len(parts) + 1):
        if root.joinpath(*parts[:depth]).is_symlink():
            return "/".join(parts[:depth])
    return None


def _blob_id(data: bytes, width: int) -> str:
    digest = hashlib.sha1 if width == 40 else hashlib.sha256
    return digest(b"blob %d\0" % len(data) + data).hexdigest()


def on_disk(root: Path, path: str) -> tuple[str, bytes] | None:
    """PATH's mode and bytes in the work tree (a symlink's target), or None when absent."""
    target = root / path
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return SYMLINK, os.fsencode(os.readlink(target))
    if not stat.S_ISREG(info.st_mode):
        return "dir", b""
    mode = EXECUTABLE if info.st_mode & stat.S_IXUSR else FILE
    return mode, target.read_bytes()


def _blobs(repo: Path, shas: list[str], env: Mapping[str, str] | None) -> dict[str, bytes]:
    """The content of each blob in SHAS, in one `cat-file --batch`."""
    wanted = list(dict.fromkeys(shas))
    if not wanted:
        return {}
    query = "".join(f"{sha}\n" for sha in wanted).encode()
    output = git.run(["cat-file", "--batch"], repo, env=env, stdin=query).stdout
    found, position = {}, 0
    for sha in wanted:
        line, position = git.batch_record(output, position, repo)
        header = line.split()
        if len(header) != 3:
            raise git.GitError(f"git cat-file: object {sha} is missing")
        size = int(header[2])
        found[sha] = git.batch_content(output, position, size, repo)
        position += size + 1
    return found


def _same_as_git_sees(repo: Path, paths: list[str], shas: list[str]) -> bool:
    """Whether git, with the install's clean filters, hashes PATHS to SHAS."""
    query = "\n".join(paths).encode(errors="surrogateescape")
    proc = git.run(["hash-object", "--stdin-paths"], repo, stdin=query, check=False)
    return proc.returncode == 0 and proc.stdout.decode().split() == shas


def changes_between(
    repo: Path,
    old_tree: str,
    new_tree: str,
    paths: Iterable[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    listed: Sequence[Listed] | None = None,
) -> list[Change]:
    """What turning the work tree from OLD_TREE into NEW_TREE changes, path by path (limited
    to PATHS when given); the old side is read from disk and must be OLD_TREE's. LISTED: the
    two trees' diff (`list_tree_diff`), when the caller has it already (no git process)."""
    if listed is None:
        listed = list_tree_diff(repo, old_tree, new_tree, paths, env=env)
    # A submodule is not a file of this tree.
    listed = [entry for entry in listed if _GITLINK not in entry[1:3]]
    news = _blobs(repo, [new for *_, new in listed if set(new) != {"0"}], env)
    changes, mismatched = [], []
    for path, old_mode, new_mode, old_sha, new_sha in listed:
        if (link := symlinked_folder(repo, path)) is not None:  # a write would land elsewhere
            raise git.GitError(f"{repo / path}: beyond the symbolic link {link}; nothing written")
        now = on_disk(repo, path)
        gone = set(new_sha) == {"0"}
        if now == (None if gone else (new_mode, news[new_sha])):
            continue  # it holds the new state already (an ignored file the tree did not see)
        absent = set(old_sha) == {"0"}
        if absent and now is not None:
            raise git.GitError(f"{repo / path}: already exists in the work tree; nothing written")
        if not absent and (now is None or now[0] == "dir"):
            raise git.GitError(f"{repo / path}: missing from the work tree; nothing written")
        if now is not None and _blob_id(now[1], len(old_sha)) != old_sha:
            mismatched.append((path, old_sha))
        changes.append(
            Change(
                path,
                None if absent else old_mode,
                None if now is None else now[1],
                None if gone else new_mode,
                news.get(new_sha),
            )
        )
    if mismatched and not _same_as_git_sees(repo, *map(list, zip(*mismatched, strict=True))):
        raise git.GitError(
            f"{repo / mismatched[0][0]}: changed while patchkeeper worked; nothing written"
        )
    return changes
