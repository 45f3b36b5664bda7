"""Classify the patch set against refs: no checkout, no change to the work tree, HEAD, the
index or the object store.

Many refs cost little more than one: their commits, versions and `Upstream-Has:` texts are
read with one git process each for all refs together, and a group of patches whose files
have the same blobs as on an earlier ref is not tried again (engine.TrialMemo). Each ref's
entries come from a diff of its tree with the one before (scratch.TreeListings), and a ref
whose tree was judged already, for a version that chooses alike, takes that answer whole.
"""

from __future__ import annotations

import fnmatch
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from packaging.version import Version

from patchkeeper.engine.classify import classify
from patchkeeper.engine.memo import TrialMemo
from patchkeeper.engine.ref_content import upstream_has_contents
from patchkeeper.install import git
from patchkeeper.install.meanwhile import meanwhile
from patchkeeper.install.scratch import TreeListings
from patchkeeper.install.version_chain import ref_versions
from patchkeeper.model.errors import UserError
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.model import PatchSet, spec_contains
from patchkeeper.patchset.settings import Settings
from patchkeeper.patchset.version_sources import NAMES_ARE_VERSIONS, DescribeSource, TagNames
from patchkeeper.patchset.versions import VersionInfo


@dataclass(frozen=True)
class RefReport:
    """How every patch fares on one ref that `check` judged."""

    ref: str
    commit: str
    version: VersionInfo
    results: list[PatchResult]
    seconds: float = 0.0  # how long judging this ref took (JUnit's `time`)


# ---------------------------------------------------------------- which refs


@dataclass(frozen=True)
class TagSelection:
    """The tags `--tags`/`--since` chose, in release order, and those matching the globs whose
    release is unknown (left out by --since: never sorted by a CalVer name)."""

    tags: list[str]
    unknown: list[str]


def select_tags(
    repo: Path, globs: Sequence[str], since: Version | None, names: TagNames = NAMES_ARE_VERSIONS
) -> TagSelection:
    """The tags matching any of GLOBS (fnmatch: `*` matches any text, `/` included; no
    globs: every tag) that name a commit, keeping with SINCE only those whose release (NAMES:
    `[tags]`, else the name) is >= SINCE. Ordered by release (tags of unknown release last,
    by name)."""
    listing = git.out(
        ["for-each-ref", "--format=%(objecttype) %(*objecttype) %(refname:strip=2)", "refs/tags/"],
        repo,
    )
    tags = []
    for line in listing.splitlines():
        kind, peeled, name = line.split(" ", 2)
        if "commit" not in (kind, peeled):
            continue  # a tag of a tree or a blob: no release to check
        if not globs or any(fnmatch.fnmatchcase(name, glob) for glob in globs):
            tags.append(name)
    versions = {tag: names.version(tag) for tag in tags}
    unknown = sorted(t for t in tags if versions[t] is None)
    if since is not None:
        tags = [t for t in tags if (v := versions[t]) is not None and v >= since]
    ordered = sorted(tags, key=lambda t: (versions[t] is None, versions[t] or Version("0"), t))
    return TagSelection(ordered, unknown)


def fetch(repo: Path, remote: str, timeout: float = 300.0) -> None:
    """Fetch REMOTE's tags and branches into their refs: HEAD, branches and the work tree do
    not move. A tag that moved upstream is taken as upstream has it now (`--force`)."""
    proc = git.run(
        ["fetch", "--quiet", "--tags", "--force", "--no-recurse-submodules", remote],
        repo,
        check=False,
        timeout=timeout,
    )
    if proc.returncode != 0:
        lines = proc.stderr.decode(errors="replace").strip().splitlines()
        why = lines[-1] if lines else f"exit {proc.returncode}"
        raise FetchError(f"{repo}: could not fetch {remote}: {why}; nothing was checked")


class FetchError(UserError):
    """`--fetch` failed: judging stale refs would be a false answer (exit 5)."""

    exit_code = 5


# ---------------------------------------------------------------- about every ref at once


def resolve(repo: Path, refs: Sequence[str]) -> tuple[list[str], list[str]]:
    """The commit each of REFS names, and its tree, in one `git cat-file` process."""
    query = "".join(f"{ref}^{{commit}}\n{ref}^{{tree}}\n" for ref in refs).encode()
    answers = git.run(["cat-file", "--batch-check"], repo, stdin=query).stdout.decode()
    lines = answers.splitlines()
    commits, trees = [], []
    for ref, commit, tree in zip(refs, lines[::2], lines[1::2], strict=True):
        sha, _, kind = commit.partition(" ")
        if not kind.startswith("commit"):
            raise UserError(f"{repo}: {ref!r} names no commit here (a typo, or not fetched yet?)")
        commits.append(sha)
        trees.append(tree.partition(" ")[0])
    return commits, trees


# ---------------------------------------------------------------- checking


def check_refs(
    repo: Path,
    patch_set: PatchSet,
    refs: Sequence[str],
    settings: Settings | None = None,
    *,
    progress: Callable[[int, int, str], None] | None = None,
    reuse: bool = True,
    batch: bool | None = None,
) -> list[RefReport]:
    """How every patch fares on each of REFS; each ref's version from SETTINGS' version
    sources at that ref (install/version_chain.py; no settings: describe). PROGRESS(done,
    total, ref) is called after each ref. REUSE and BATCH off: every patch tried alone on
    every ref (the same results, slower)."""
    refs = list(refs)
    if not refs:
        return []
    if settings is None:
        settings = Settings(None, repo, version_scheme=patch_set.scheme)
        settings = replace(settings, tags=TagNames(None, patch_set.scheme))
    # A chain of describe alone reads refs, not files: asked beside the lookup.
    only_describe = all(isinstance(s, DescribeSource) for s in settings.version_sources)
    described = meanwhile(ref_versions, repo, refs, settings) if only_describe else None
    commits, trees = resolve(repo, refs)
    versions = described() if described else ref_versions(repo, commits, settings)
    variants = [v for p in patch_set.patches for v in p.variants]
    has = upstream_has_contents(repo, commits, variants)
    memo = TrialMemo() if reuse else None
    chosen = [v for p in patch_set.patches for info in versions for v in p.candidates(info.version)]
    listings = TreeListings(repo, {path for v in chosen for path in v.files}, trees)
    judged: dict[str, tuple[Version | None, list[PatchResult]]] = {}  # tree -> first results
    reports = []
    for number, (ref, commit, tree, version) in enumerate(
        zip(refs, commits, trees, versions, strict=True)
    ):
        started = time.monotonic()
        earlier = judged.get(tree) if reuse else None
        if earlier is not None and same_choices(patch_set, earlier[0], version.version):
            results = [_copy(result) for result in earlier[1]]
        else:
            results = classify(
                patch_set,
                repo,
                version.version,
                upstream_ref=commit,
                target_ref=commit,
                trees=False,
                batch=batch,
                memo=memo,
                has_content=has[commit],
                listing=functools.partial(listings.listing, tree),
            ).results
            judged.setdefault(tree, (version.version, results))
        seconds = time.monotonic() - started
        reports.append(RefReport(ref, commit, version, results, seconds))
        if progress is not None:
            progress(number + 1, len(refs), ref)
    return reports


def _copy(result: PatchResult) -> PatchResult:
    """A result of its own for another ref: a shallow copy (nothing changes a result once
    judged; copy.copy would cost more than the judging it saves)."""
    twin = object.__new__(PatchResult)
    twin.__dict__.update(result.__dict__)
    return twin


def same_choices(patch_set: PatchSet, one: Version | None, other: Version | None) -> bool:
    """Whether the versions ONE and OTHER are judged alike on the same tree: every patch has
    a variant for both, the same, and no Upstream-Fixed-In of it contains either (what is
    said about such a patch names the version)."""
    for patch in patch_set.patches:
        found = patch.candidates(one)
        if len(found) != 1 or found != patch.candidates(other):
            return False  # none, or several chosen by content
        if found[0].by_content and None in (one, other):
            return False  # chosen by content for the unknown version, and says so
        fixed = found[0].upstream_fixed_in
        if spec_contains(fixed, one) or spec_contains(fixed, other):
            return False
    return True


def check_ref(
    repo: Path, patch_set: PatchSet, ref: str, settings: Settings | None = None
) -> RefReport:
    """How every patch fares on REF (see check_refs)."""
    return check_refs(repo, patch_set, [ref], settings)[0]
