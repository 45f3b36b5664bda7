"""Which checks a run's patch results call for, which patches a check proves, and the run
`update` and `apply` make after putting the patches back.

A patch counts when its content is in the install (written, already applied, or shipped by
upstream); a not-applicable patch counts only when the install is older than every variant
("unfixed": the broken path is there, with no fix for it yet).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from packaging.version import Version

from patchkeeper.install.checkout.install import Install, install_version
from patchkeeper.model import outcomes as oc
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.model import Patch, PatchFile, PatchSet
from patchkeeper.patchset.settings import Settings
from patchkeeper.patchset.variants import bounds, release_point
from patchkeeper.patchset.versions import VersionInfo
from patchkeeper.proof.smoke.one_check import Progress
from patchkeeper.proof.smoke.results import ERROR, PASS, SmokeReport
from patchkeeper.proof.smoke.suite import run_checks


def predates_every_variant(patch: Patch, version: Version) -> bool:
    """VERSION is older than every variant of PATCH (each Applies-To leaves it out and has a
    lower bound at or above it, whatever operator gives the bound: `>=`, `>`, `~=`, `==X.*`):
    no fix for a release this old exists yet, unlike a version past every range."""
    point = release_point(version)

    def ahead(variant: PatchFile) -> bool:
        specs = variant.applies_to
        return (
            specs is not None
            and not specs.contains(version, prereleases=True)
            and point <= bounds(specs).low
        )

    return bool(patch.variants) and all(ahead(v) for v in patch.variants)


def unfixed_results(
    patch_set: PatchSet, results: Iterable[PatchResult], version: Version | None
) -> list[PatchResult]:
    """The not-applicable results of patches whose every variant is for later releases.

    Their fix has no variant here, yet the path it fixes is there: their checks still run, so
    a run is never green while a check shows a known-broken path broken.
    """
    if version is None:
        return []
    unfixed = []
    for result in results:
        patch = patch_set.by_name(result.name)
        if result.outcome == oc.NOT_APPLICABLE and patch and predates_every_variant(patch, version):
            unfixed.append(result)
    return unfixed


def unfixed_notes(
    patch_set: PatchSet, unfixed: Iterable[PatchResult], checks: Iterable[dict[str, Any]]
) -> list[str]:
    """For each unfixed patch whose check did not pass: which path failed, and why no fix
    applies (the releases its variants are for)."""
    failing = {c["name"]: c for c in checks if c["verdict"] != PASS}
    notes = []
    for result in unfixed:
        patch = patch_set.by_name(result.name)
        variants = patch.variants if patch else ()
        named = dict.fromkeys(n.removesuffix(".py") for v in variants for n in v.smoke)
        for name in (n for n in named if n in failing):
            ranges = " or ".join(dict.fromkeys(str(v.applies_to) for v in variants))
            said = "could not check" if failing[name]["verdict"] == ERROR else "failed"
            detail = failing[name].get("detail") or ""
            why = f": {detail}" if detail else f"; update upstream to a release for {ranges} first"
            notes.append(
                f"{result.name} has no fix for this release (its variants are for {ranges}), "
                f"and its check {name} {said}{why}"
            )
    return notes


def checks_for_patches(
    patch_set: PatchSet,
    settings: Settings,
    results: Iterable[PatchResult],
    version: Version | None = None,
) -> list[str]:
    """Checks named by the `Smoke:` headers of patches now in the install, then [smoke] checks.

    A patch counts when its content is there: written now, already applied, or upstream has it
    (the check proves the fix works whoever ships it). Conflicts name no checks: their fix is
    not there to prove. A not-applicable patch names its checks only when the install (at
    VERSION) is older than every variant (`unfixed_results`): the path is there, unfixed.
    """
    results = list(results)
    unfixed = unfixed_results(patch_set, results, version)
    names: list[str] = []
    for result in unfixed:
        patch = patch_set.by_name(result.name)
        names += [n for v in (patch.variants if patch else ()) for n in v.smoke]
    for result in results:
        if result.outcome in (*oc.FAILED, oc.NOT_APPLICABLE):
            continue
        patch = patch_set.by_name(result.name)
        if patch is None:
            continue
        if result.variant:
            variant_path = patch_set.root / result.variant
            names += [n for v in patch.variants if v.path == variant_path for n in v.smoke]
        elif result.outcome == oc.UPSTREAM_HAS_IT:
            names += [n for v in probed_variants(patch, result.detail) for n in v.smoke]
    return list(dict.fromkeys([*names, *settings.smoke_checks]))


def probed_variants(patch: Patch, detail: str) -> list[PatchFile]:
    """The variants of PATCH whose `Upstream-Has:` probe or `Upstream-Fixed-In` range retired
    it, as DETAIL reports it.

    A patch retired with no variant for the release (heartbeat-fence on 0.21.3+, or a fix
    for `<2.0` whose `Upstream-Fixed-In: >=2.0` says 2.0 has it) has no chosen variant, yet
    upstream's fix is said to be there: the matched variant's check proves it works, whoever
    ships it (a header's word alone is never the proof).
    """
    return [
        v
        for v in patch.variants
        if (v.upstream_has and detail == v.upstream_has_reason)
        or (v.upstream_fixed_in is not None and detail.startswith(v.upstream_fixed_in_reason))
    ]


def patches_proven_by(
    patch_set: PatchSet, results: Iterable[PatchResult], checks: Iterable[str]
) -> list[str]:
    """The patches among RESULTS whose chosen variant's `Smoke:` header names one of CHECKS."""
    wanted = {name.removesuffix(".py") for name in checks}
    names = []
    for result in results:
        patch = patch_set.by_name(result.name)
        chosen = patch_set.root / result.variant if result.variant else None
        for variant in patch.variants if patch else ():
            if variant.path == chosen and wanted & {n.removesuffix(".py") for n in variant.smoke}:
                names.append(result.name)
    return list(dict.fromkeys(names))


def run_for_patches(
    install: Install,
    settings: Settings,
    patch_set: PatchSet,
    results: Iterable[PatchResult],
    on_progress: Progress | None = None,
    version: VersionInfo | None = None,
) -> SmokeReport:
    """What `update` calls after putting the patches back: the checks their headers name.

    VERSION is the install's version as the caller already worked it out (`apply_patches`'s
    report has it); without it, and only when a patch is not applicable, it is worked out
    again (the version-source chain, install/checkout/version_chain.py). A check named by a header
    but missing from smoke/ comes back as `error`, never skipped.
    """
    results = list(results)
    if version is None and any(r.outcome == oc.NOT_APPLICABLE for r in results):
        version = install_version(install, settings)
    names = checks_for_patches(
        patch_set, settings, results, version.version if version else None
    )
    return run_checks(install, settings, patch_set, names, on_progress)
