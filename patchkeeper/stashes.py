"""Stash entries of an install, and whether one holds a patch's content (a parked autostash)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from patchkeeper import git
from patchkeeper.patchset import PatchFile
from patchkeeper.scratch import scratch_index


@dataclass(frozen=True)
class StashEntry:
    selector: str  # stash@{n}
    sha: str
    message: str

    @property
    def untracked(self) -> str:
        """The commit holding untracked files (`stash push --include-untracked`), as a rev."""
        return f"{self.sha}^3"


def list_stashes(repo: Path) -> list[StashEntry]:
    proc = git.run(["stash", "list", "--format=%gd%x00%H%x00%gs"], repo, check=False)
    entries = []
    for line in proc.stdout.decode(errors="replace").splitlines():
        selector, sha, message = line.split("\0", 2)
        entries.append(StashEntry(selector, sha, message))
    return entries


def stash_holds(repo: Path, entry: StashEntry, variant: PatchFile) -> bool:
    """Whether the stashed work tree (tracked and untracked files) holds all of VARIANT."""
    with scratch_index(repo) as index:
        index.load_ref(entry.sha, variant.files)
        if git.rev_parse(repo, entry.untracked):
            index.load_ref(entry.untracked, variant.files, overlay=True)
        return index.apply(variant.diff, "--check", "--reverse").returncode == 0
