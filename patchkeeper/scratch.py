"""A temporary git index holding only the paths a patch set touches.

Every question ("does this patch apply here?") is answered with `git apply --cached` against
this index: no checkout, no change to the install's own index or work tree. Loading a ref costs
one `ls-tree` and one `update-index`, whatever the size of the repository.
"""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from patchkeeper import git


class ScratchIndex:
    def __init__(self, repo: Path, index_file: Path) -> None:
        self.repo = repo
        self.env = {"GIT_INDEX_FILE": str(index_file)}
        self._tree: str | None = None  # the tree of the index as it is now, once written

    def _git(self, args: list[str], stdin: bytes | None = None, check: bool = True):
        return git.run(args, self.repo, env=self.env, stdin=stdin, check=check)

    def _changed(self) -> None:
        self._tree = None

    def load_ref(self, ref: str, paths: Iterable[str], *, overlay: bool = False) -> None:
        """Index REF's content of PATHS; with OVERLAY, on top of what the index holds."""
        self._changed()
        if not overlay:
            self._git(["read-tree", "--empty"])
        listing = self._git(["ls-tree", "-r", "-z", ref, "--", *sorted(set(paths))]).stdout
        if listing:
            self._git(["update-index", "-z", "--index-info"], stdin=listing)

    def load_worktree(self, paths: Iterable[str]) -> None:
        """Index the work tree's current content of PATHS (absent files stay absent)."""
        self._changed()
        self._git(["read-tree", "--empty"])
        present = [p for p in sorted(set(paths)) if (self.repo / p).is_file()]
        if not present:
            return
        # Raw bytes (no clean filters): the combined diff is applied to these very bytes.
        shas = self._git(
            ["hash-object", "-w", "--no-filters", "--stdin-paths"],
            stdin="\n".join(present).encode(),
        )
        entries = []
        for path, sha in zip(present, shas.stdout.decode().split(), strict=True):
            executable = os.stat(self.repo / path).st_mode & stat.S_IXUSR
            entries.append(f"{'100755' if executable else '100644'} {sha}\t{path}\0")
        self._git(["update-index", "-z", "--index-info"], stdin="".join(entries).encode())

    def read_file(self, path: str) -> bytes | None:
        """The content this index holds for PATH, or None when it holds none."""
        proc = self._git(["cat-file", "blob", f":{path}"], check=False)
        return proc.stdout if proc.returncode == 0 else None

    def write_tree(self) -> str:
        if self._tree is None:
            self._tree = self._git(["write-tree"]).stdout.decode().strip()
        return self._tree

    def read_tree(self, tree: str) -> None:
        self._git(["read-tree", tree])
        self._tree = tree

    def apply(self, diff: bytes, *flags: str) -> subprocess.CompletedProcess[bytes]:
        """`git apply --cached -v FLAGS` on this index; the caller reads the exit code.

        git apply is atomic: when it fails, the index is as it was.
        """
        proc = self._git(["apply", "--cached", "-v", *flags], stdin=diff, check=False)
        if "--check" not in flags:
            self._changed()
        return proc


@contextmanager
def scratch_index(repo: Path) -> Iterator[ScratchIndex]:
    with tempfile.TemporaryDirectory(prefix="patchkeeper-") as tmp:
        yield ScratchIndex(repo, Path(tmp) / "index")


def tree_diff(repo: Path, old: str, new: str, paths: Iterable[str] = ()) -> bytes:
    """The exact diff between two (partial) trees, with full blob ids for later 3-way use;
    limited to PATHS when given."""
    limit = ["--", *paths] if paths else []
    return git.run(["diff", "--binary", "--full-index", old, new, *limit], repo).stdout
