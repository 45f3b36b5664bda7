"""Refs the upstream updater leaves when it moves HEAD (what `hermes update` 0.21.3 writes).

- `refs/hermes/pre-release/<sha>`: the detached HEAD before a release-channel update. One is
  added on nearly every release update; it backs up a commit the install ran, holds no edits,
  and is listed for information only.
- `refs/tags/pre-update-<stamp>`: a branch tip before a custom-branch merge. The merged branch
  still contains it: information only.
- `refs/hermes-update-backups/...` (`orphan-<branch>-<stamp>-<sha12>`): local history that
  shared no ancestor with upstream, saved before a reset. Those commits are on no branch any
  more: a person must look at them, so they are never green.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from patchkeeper.install.plumbing import git

PRE_RELEASE = "pre-release"
PRE_UPDATE = "pre-update"
ORPHAN = "orphan-backup"

_PREFIXES = {
    "refs/hermes/pre-release/": PRE_RELEASE,
    "refs/tags/pre-update-": PRE_UPDATE,
    "refs/hermes-update-backups/": ORPHAN,
}


@dataclass(frozen=True)
class UpdaterBackup:
    """A backup ref an updater made (before a reset, or of a branch)."""

    ref: str
    commit: str
    created: float | None
    kind: str

    @property
    def needs_a_person(self) -> bool:
        """Whether it may hold commits that are nowhere else (a reset's rescue ref)."""
        return self.kind == ORPHAN

    def inspect_command(self) -> str:
        return f"git log --oneline {shlex.quote(self.ref)}"

    def keep_command(self) -> str:
        """Keep its commits on a branch of their own, then the backup can go."""
        name = "rescued-" + self.ref.rsplit("/", 1)[-1]
        return f"git branch {shlex.quote(name)} {shlex.quote(self.ref)}"

    def delete_command(self) -> str:
        return f"git update-ref -d {shlex.quote(self.ref)}"


def _kind(ref: str) -> str | None:
    return next((kind for prefix, kind in _PREFIXES.items() if ref.startswith(prefix)), None)


def updater_backups(repo: Path) -> list[UpdaterBackup]:
    """Every backup ref the upstream updater left, oldest first (one git call)."""
    raw = git.out(
        [
            "for-each-ref",
            "--sort=creatordate",
            "--format=%(refname)%00%(objectname)%00%(*objectname)%00%(creatordate:unix)",
            "refs/hermes/pre-release/",
            "refs/tags/",
            "refs/hermes-update-backups/",
        ],
        repo,
    )
    found = []
    for line in raw.splitlines():
        ref, sha, peeled, stamp = line.split("\0")
        kind = _kind(ref)
        if kind is None:
            continue
        created = float(stamp) if stamp.isdigit() else None
        found.append(UpdaterBackup(ref, peeled or sha, created, kind))
    return found


def describe(backups: list[UpdaterBackup]) -> str:
    """One line for a report: how many backups, and which need a person."""
    count = {kind: sum(1 for b in backups if b.kind == kind) for kind in _PREFIXES.values()}
    parts = [
        f"{count[PRE_RELEASE]} pre-release ref(s)" if count[PRE_RELEASE] else "",
        f"{count[PRE_UPDATE]} pre-update tag(s)" if count[PRE_UPDATE] else "",
        f"{count[ORPHAN]} orphan backup(s) to look at" if count[ORPHAN] else "",
    ]
    return "updater backups: " + ", ".join(part for part in parts if part)
