"""Classify the patch set against refs: no checkout, no change to the work tree, HEAD, the
index or the object store.

Many refs cost little more than one: their commits, versions and `Upstream-Has:` texts are
read with one git process each for all refs together, and a group of patches whose files
have the same blobs as on an earlier ref is not tried again (engine.TrialMemo). Each ref's
entries come from a diff of its tree with the one before (scratch.TreeListings), and a ref
whose tree was judged already, for a version that chooses alike, takes that answer whole: the
very same list of results, with no work per patch (`Choices` says in one comparison whether two
versions choose alike, looking only at the fixes whose choice can depend on the version).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from packaging.version import Version

from patchkeeper.engine.classify import classify
from patchkeeper.engine.memo import TrialMemo
from patchkeeper.engine.ref_content import upstream_has_contents
from patchkeeper.install.checkout.version_chain import ref_versions
from patchkeeper.install.plumbing import git
from patchkeeper.install.plumbing.meanwhile import meanwhile
from patchkeeper.install.plumbing.scratch_index import TreeListings
from patchkeeper.model.errors import UserError
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.model import Patch, PatchFile, PatchSet, spec_contains
from patchkeeper.patchset.settings import Settings
from patchkeeper.patchset.version_sources import DescribeSource, TagNames
from patchkeeper.patchset.versions import VersionInfo


@dataclass(frozen=True)
class RefReport:
    """How every patch fares on one ref that `check` judged."""

    ref: str
    commit: str
    version: VersionInfo
    # A ref whose tree and choices were judged already shares that ref's list: results are
    # never changed once judged, and a renderer may say such a list once (report/render.py).
    results: list[PatchResult]
    seconds: float = 0.0  # how long judging this ref took (JUnit's `time`)


# ---------------------------------------------------------------- which refs


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


def resolve(
    repo: Path, refs: Sequence[str], known: Mapping[str, tuple[str, str]] | None = None
) -> tuple[list[str], list[str]]:
    """The commit each of REFS names, and its tree: from KNOWN (ref -> commit, tree) when it
    has them, the others in one `git cat-file` process (none when KNOWN has every ref)."""
    known = known or {}
    asked = [ref for ref in dict.fromkeys(refs) if ref not in known]
    found = dict(known)
    if asked:
        query = "".join(f"{ref}^{{commit}}\n{ref}^{{tree}}\n" for ref in asked).encode()
        answers = git.run(["cat-file", "--batch-check"], repo, stdin=query).stdout.decode()
        lines = answers.splitlines()
        for ref, commit, tree in zip(asked, lines[::2], lines[1::2], strict=True):
            sha, _, kind = commit.partition(" ")
            if not kind.startswith("commit"):
                why = "a typo, or not fetched yet?"
                raise UserError(f"{repo}: {ref!r} names no commit here ({why})")
            found[ref] = (sha, tree.partition(" ")[0])
    return [found[ref][0] for ref in refs], [found[ref][1] for ref in refs]


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
    known: Mapping[str, tuple[str, str]] | None = None,
) -> list[RefReport]:
    """How every patch fares on each of REFS; each ref's version from SETTINGS' version
    sources at that ref (install/checkout/version_chain.py; no settings: describe). PROGRESS(done,
    total, ref) is called after each ref. REUSE and BATCH off: every patch tried alone on
    every ref (the same results, slower). KNOWN: the commit and tree of refs read already
    (tag_selection.py's listing), not asked of git again."""
    refs = list(refs)
    if not refs:
        return []
    if settings is None:
        settings = Settings(None, repo, version_scheme=patch_set.scheme)
        settings = replace(settings, tags=TagNames(None, patch_set.scheme))
    # A chain of describe alone reads refs, not files: asked beside the lookup. A listed tag
    # is described by the commit the listing found: its name may read as another ref to git.
    only_describe = all(isinstance(s, DescribeSource) for s in settings.version_sources)
    named = [known[ref][0] if known and ref in known else ref for ref in refs]
    described = meanwhile(ref_versions, repo, named, settings) if only_describe else None
    commits, trees = resolve(repo, refs, known)
    versions = described() if described else ref_versions(repo, commits, settings)
    variants = [v for p in patch_set.patches for v in p.variants]
    unique_trees = list(dict.fromkeys(trees))  # a tree's blobs are its commits' blobs
    has = upstream_has_contents(repo, unique_trees, variants)
    memo = TrialMemo() if reuse else None
    choices = Choices(patch_set)
    listings = TreeListings(repo, choices.paths(v.version for v in versions), trees)
    judged: dict[str, tuple[tuple | None, list[PatchResult]]] = {}  # tree -> first results
    reports = []
    for number, (ref, commit, tree, version) in enumerate(
        zip(refs, commits, trees, versions, strict=True)
    ):
        started = time.monotonic()
        key = choices.key(version.version)
        earlier = judged.get(tree) if reuse else None
        if earlier is not None and key is not None and earlier[0] == key:
            results = earlier[1]  # the same list: nothing to copy, judge or count again
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
                has_content=has[tree],
                listing=functools.partial(listings.listing, tree),
            ).results
            judged.setdefault(tree, (key, results))
        seconds = time.monotonic() - started
        reports.append(RefReport(ref, commit, version, results, seconds))
        if progress is not None:
            progress(number + 1, len(refs), ref)
    return reports


class Choices:
    """Which variants versions choose, said as a key two versions judged alike on the same
    tree share: every fix has one variant for the version, and no Upstream-Fixed-In of it
    contains the version (what is said about such a patch names the version), and no variant
    chosen by content is taken for the unknown version (the result says so).

    Only fixes whose choice can depend on the version are asked per version (several
    variants, an `Applies-To`, an `Upstream-Fixed-In`, `Choose: by-content`): a plain patch
    file is the same variant for every version, asked once. So a version costs the few fixes
    that have variants, not every fix of the set."""

    def __init__(self, patch_set: PatchSet) -> None:
        self._varying: list[Patch] = []
        self._fixed: list[PatchFile] = []  # the variant each other fix takes for any version
        for patch in patch_set.patches:
            if len(patch.variants) > 1 or any(
                v.applies_to is not None or v.upstream_fixed_in is not None or v.by_content
                for v in patch.variants
            ):
                self._varying.append(patch)
            else:
                self._fixed += patch.candidates(None)
        self._keys: dict[Version | None, tuple | None] = {}

    def key(self, version: Version | None) -> tuple | None:
        """What VERSION chooses, or None when a result on it may name the version (then no
        other version's results stand for it)."""
        if version not in self._keys:
            self._keys[version] = self._key(version)
        return self._keys[version]

    def _key(self, version: Version | None) -> tuple | None:
        chosen = []
        for patch in self._varying:
            found = patch.candidates(version)
            if len(found) != 1:
                return None  # none, or several chosen by content
            if found[0].by_content and version is None:
                return None  # chosen by content for the unknown version, and says so
            if spec_contains(found[0].upstream_fixed_in, version):
                return None
            chosen.append(found[0].path)
        return tuple(chosen)

    def paths(self, versions: Iterable[Version | None]) -> set[str]:
        """Every path a variant chosen for any of VERSIONS touches (fix by fix, version by
        version: the first choice two variants both claim is the one refused)."""
        paths = {path for v in self._fixed for path in v.files}
        versions = list(dict.fromkeys(versions))
        for patch in self._varying:
            for version in versions:
                paths.update(path for v in patch.candidates(version) for path in v.files)
        return paths


def check_ref(
    repo: Path, patch_set: PatchSet, ref: str, settings: Settings | None = None
) -> RefReport:
    """How every patch fares on REF (see check_refs)."""
    return check_refs(repo, patch_set, [ref], settings)[0]
