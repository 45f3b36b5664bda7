"""Classify the patch set against refs: no checkout, no change to the work tree or HEAD."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from patchkeeper import git
from patchkeeper.engine import classify
from patchkeeper.errors import UserError
from patchkeeper.outcomes import PatchResult
from patchkeeper.patchset import PatchSet
from patchkeeper.scratch import ScratchIndex
from patchkeeper.version import VersionFile, VersionInfo, version_of_ref


@dataclass(frozen=True)
class RefReport:
    ref: str
    commit: str
    version: VersionInfo
    results: list[PatchResult]


def check_ref(
    repo: Path, patch_set: PatchSet, ref: str, version_file: VersionFile | None = None
) -> RefReport:
    """How every patch fares on REF; its version from VERSION_FILE's blob there, else describe."""
    commit = git.rev_parse(repo, ref)
    if commit is None:
        raise UserError(f"{repo}: {ref!r} names no commit here (a typo, or not fetched yet?)")
    version = version_of_ref(repo, commit, version_file)

    def load(index: ScratchIndex, paths: set[str]) -> None:
        index.load_ref(commit, paths)

    classification = classify(patch_set, repo, version.version, load, upstream_ref=commit)
    return RefReport(ref, commit, version, classification.results)


def check_refs(
    repo: Path, patch_set: PatchSet, refs: tuple[str, ...], version_file: VersionFile | None = None
) -> list[RefReport]:
    return [check_ref(repo, patch_set, ref, version_file) for ref in refs]
