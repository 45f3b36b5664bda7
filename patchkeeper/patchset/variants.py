"""Variants of one fix: whose `Applies-To` ranges overlap, and which variant a version picks.

Each range is bounded once (`Bounds`: the least and the most a contained version's release
can be), so neither question compares every variant with every other: ranges whose bounds
are apart cannot share a version, and only pairs whose bounds meet are probed version by
version (`overlap_at`, the same probes and so the same answer as before). Sorted by their
lower bounds, variants with disjoint ranges (what a folder of variants is) give no such pair,
and a version finds its variant by bisection.

The two questions are asked in different places. Whether any two ranges overlap, for any
version, is `lint`'s (and `update`'s, before it changes anything, since the version it will
choose for is not known yet): a load does not ask it. A choice meets only the version it makes,
and refuses one that two variants both claim (`AmbiguousVariant`, exit 2).

Ranges may overlap where the set says so: variants that all carry `Choose: by-content` are
chosen by what applies when more than one claims a version (or when the version is unknown).
The choice then hands the engine every such candidate; the engine tries them and keeps the one
that applies (engine/by_content.py). An overlap with a variant that does not say so is refused
as before.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import operator
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from patchkeeper.model.errors import UserError
from patchkeeper.model.problems import Problem
from patchkeeper.patchset.model import BY_CONTENT_FIELD, PatchFile

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

# A point on the line of releases: (release key, 0 just below it, 1 at it, 2 just above it).
# A release key is (epoch, release without trailing zeros), so tuples order as versions do.
Point = tuple[tuple[float, ...], int]
_BELOW_ALL: Point = ((-1.0,), 0)
_ABOVE_ALL: Point = ((float("inf"),), 2)


def _key(epoch: int, release: Iterable[int]) -> tuple[float, ...]:
    parts = list(release)
    while parts and parts[-1] == 0:
        parts.pop()
    return (epoch, *parts)


@functools.cache
def release_point(version: Version) -> Point:
    """Where VERSION stands (its pre-, post-, dev- and local parts aside)."""
    return _key(version.epoch, version.release), 1


def _plain(version: Version) -> bool:
    return version.pre is None and version.post is None and version.dev is None


@functools.cache
def _specifier_bounds(operator: str, text: str) -> tuple[Point, Point]:
    """The points a version the specifier OPERATOR TEXT contains lies between, both included
    (wider is safe: the bounds only ever rule a version out). Cached by its text: hashing a
    Specifier canonicalises its version every time."""
    if operator in ("!=", "==="):
        return _BELOW_ALL, _ABOVE_ALL
    try:
        version = Version(text.removesuffix(".*"))
    except InvalidVersion:
        return _BELOW_ALL, _ABOVE_ALL
    key = _key(version.epoch, version.release)
    if text.endswith(".*") or operator == "~=":
        if not _plain(version) or version.local is not None:
            return _BELOW_ALL, _ABOVE_ALL
        prefix = list(version.release if operator == "==" else version.release[:-1])
        if not prefix:
            return _BELOW_ALL, _ABOVE_ALL
        above = _key(version.epoch, [*prefix[:-1], prefix[-1] + 1])
        return (key, 1), (above, 0)
    if operator == "==":
        return (key, 1), (key, 1)
    if operator == ">=":
        return (key, 1), _ABOVE_ALL
    if operator == ">":  # a plain V excludes its own post and local releases
        return (key, 2 if _plain(version) else 1), _ABOVE_ALL
    if operator == "<=":
        return _BELOW_ALL, (key, 1)
    if operator == "<":  # a plain V excludes its own pre-releases
        return _BELOW_ALL, (key, 0 if _plain(version) else 1)
    return _BELOW_ALL, _ABOVE_ALL


@dataclass(frozen=True)
class Bounds:
    """The versions an Applies-To range admits, as its lowest and highest point."""

    low: Point
    high: Point

    @property
    def empty(self) -> bool:
        return self.low > self.high

    def holds(self, point: Point) -> bool:
        return self.low <= point <= self.high


# A range's bounds by the range itself (kept, so that its id is not reused): the ranges of a
# set's variants are shared objects (fields.specifier_set), a few for thousands of variants.
_BOUNDED: dict[int, tuple[SpecifierSet, Bounds]] = {}


def bounds(spec_set: SpecifierSet | None) -> Bounds:
    """The bounds of every version SPEC_SET contains (None: every version); a specifier many
    variants share is bounded once, and so is a range."""
    known = _BOUNDED.get(id(spec_set)) if spec_set is not None else None
    if known is not None and known[0] is spec_set:
        return known[1]
    low, high = _BELOW_ALL, _ABOVE_ALL
    for spec in spec_set or ():
        one_low, one_high = _specifier_bounds(spec.operator, spec.version)
        low, high = max(low, one_low), min(high, one_high)
    found = Bounds(low, high)
    if spec_set is not None and len(_BOUNDED) < 4096:
        _BOUNDED[id(spec_set)] = (spec_set, found)
    return found


def meeting_pairs(all_bounds: Sequence[Bounds]) -> list[tuple[int, int]]:
    """The pairs (i, j), i < j, whose bounds meet, in that order; one sweep by lower bound."""
    order = sorted((b.low, i) for i, b in enumerate(all_bounds) if not b.empty)
    active: list[int] = []
    pairs: list[tuple[int, int]] = []
    for low, i in order:
        active = [j for j in active if all_bounds[j].high >= low]
        pairs += [(min(i, j), max(i, j)) for j in active]
        active.append(i)
    return sorted(pairs)


# ---------------------------------------------------------------- overlap


def _probe_versions(specs: Iterable[SpecifierSet]) -> list[Version]:
    """Versions on and around every boundary the specifiers name: enough to find an overlap."""
    probes: set[Version] = {Version("0"), Version("99999")}
    for spec_set in specs:
        for spec in spec_set:
            release = [int(x) for x in re.findall(r"\d+", spec.version.split("+")[0])][:6]
            if not release:
                continue
            for length in range(1, len(release) + 1):
                head = release[:length]
                bumped = [*head[:-1], head[-1] + 1]
                for point in (head, bumped):
                    probes.add(Version(".".join(map(str, point))))
                    probes.add(Version(".".join(map(str, [*point, 0, 1]))))
                    if any(point):
                        last = max(i for i, v in enumerate(point) if v)
                        below = [*point[:last], point[last] - 1, 999999]
                        probes.add(Version(".".join(map(str, below))))
    return sorted(probes)


def overlap_at(a: SpecifierSet | None, b: SpecifierSet | None) -> Version | None:
    """A version both ranges contain, as far as probing their boundaries finds one (None: no
    range at all contains every version)."""
    if a is None or b is None:
        return Version("0")
    for probe in _probe_versions([a, b]):
        if a.contains(probe, prereleases=True) and b.contains(probe, prereleases=True):
            return probe
    return None


def overlap_problems(variants: Sequence[PatchFile]) -> list[Problem]:
    """A problem for each pair of VARIANTS (of one folder) whose ranges share a version; an
    invalid variant has no range to judge and is left out."""
    variants = [v for v in variants if v.invalid is None]
    problems = []
    pairs = meeting_pairs([bounds(v.applies_to) for v in variants])
    for i, j in pairs:
        first, second = variants[i], variants[j]
        if first.by_content and second.by_content:
            continue  # the set says: choose between them by what applies
        both = overlap_at(first.applies_to, second.applies_to)
        if both is not None:
            problems.append(
                Problem(
                    second.path,
                    1,
                    f"Applies-To overlaps variant {first.path.name} (both contain {both}); "
                    "every variant in a folder needs its own range, or "
                    f"'{BY_CONTENT_FIELD}' in both to choose by what applies",
                )
            )
    return problems


# ---------------------------------------------------------------- choice


# What VariantChoice._sorted makes of a fix's ranges, by the ranges themselves (kept, so that
# their ids are not reused), never changed once made: a set's fixes share their ranges (a
# range is one object, fields.specifier_set), variant k of every fix often the same.
Sorted = tuple[list[Bounds], list[int], list[Point], list[Point]]
_SORTED: dict[tuple[int, ...], tuple[tuple[SpecifierSet | None, ...], Sorted]] = {}


class VariantChoice:
    """Which of a fix's variants a version picks: the one that has no range or whose range
    contains the version, found among the few whose bounds hold it. Two that both claim the
    version are refused (`AmbiguousVariant`), never one of them picked quietly: the overlap of
    ranges is `lint`'s to judge for every version, a choice only ever meets the one it makes.
    Variants that all say `Choose: by-content` are the exception: every one that claims the
    version is a candidate, for the engine to choose by what applies; for an unknown version
    every such variant is."""

    def __init__(self, variants: Sequence[PatchFile]) -> None:
        self._variants = variants
        self._unversioned = next((v for v in variants if v.applies_to is None), None)
        self._chosen: dict[Version | None, tuple[PatchFile, ...]] = {}

    @functools.cached_property
    def _sorted(self) -> Sorted:
        """Each variant's bounds; the variants in order of their lower bounds, those lower
        bounds, and the highest upper bound among the first k + 1 of them. Made on the first
        version asked: a command that never chooses (`lint`) never bounds a range here; made
        once for every fix whose variants have the very same ranges, in the same order."""
        ranges = tuple(v.applies_to for v in self._variants)
        key = tuple(map(id, ranges))
        known = _SORTED.get(key)
        if known is not None and all(map(operator.is_, known[0], ranges)):
            return known[1]
        all_bounds = [bounds(spec) for spec in ranges]
        order = sorted(range(len(all_bounds)), key=[b.low for b in all_bounds].__getitem__)
        lows = [all_bounds[i].low for i in order]
        reach = list(itertools.accumulate((all_bounds[i].high for i in order), max))
        found = all_bounds, order, lows, reach
        if len(_SORTED) < 1024:
            _SORTED[key] = (ranges, found)
        return found

    def __call__(self, version: Version | None) -> tuple[PatchFile, ...]:
        """The candidates for VERSION: none, one, or (by content only) several."""
        if len(self._variants) == 1 and self._unversioned is not None:
            return (self._unversioned,)  # a plain patch file: the one variant, whatever the version
        if version not in self._chosen:
            self._chosen[version] = self._choose(version)
        return self._chosen[version]

    def _choose(self, version: Version | None) -> tuple[PatchFile, ...]:
        """The variants that claim VERSION (an unknown version: the one with no range, else
        every variant chosen by content)."""
        if version is None:
            claims = [v for v in self._variants if v.applies_to is None]
            if not claims:
                claims = [v for v in self._variants if v.by_content]
        else:
            claims = []
            for i in self._candidates(version):
                spec = self._variants[i].applies_to
                if spec is None or spec.contains(version, prereleases=True):
                    claims.append(self._variants[i])
        if len(claims) > 1 and not all(v.by_content for v in claims):
            plain = [v for v in claims if not v.by_content]
            other = next(v for v in claims if v is not plain[0])
            first, second = sorted((plain[0], other), key=claims.index)
            raise AmbiguousVariant(first, second, version)
        return tuple(claims)

    def _candidates(self, version: Version) -> list[int]:
        """The variants whose bounds hold VERSION, in folder order."""
        all_bounds, order, lows, reach = self._sorted
        point = release_point(version)
        candidates = []
        k = bisect.bisect_right(lows, point) - 1
        while k >= 0 and reach[k] >= point:
            if all_bounds[order[k]].holds(point):
                candidates.append(order[k])
            k -= 1
        return sorted(candidates)


class AmbiguousVariant(UserError):
    """Two variants of one fix both claim the version a command chooses for (exit 2)."""

    def __init__(self, first: PatchFile, second: PatchFile, version: Version | None) -> None:
        both = (
            f"both contain {version}, the version a variant is chosen for"
            if version is not None
            else "neither has an Applies-To, so both are for every version"
        )
        super().__init__(
            f"{second.path}: Applies-To overlaps variant {first.path.name} ({both}); every "
            f"variant in a folder needs its own range, or '{BY_CONTENT_FIELD}' in both "
            "(`patchkeeper lint` lists every overlap)"
        )
