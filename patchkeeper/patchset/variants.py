"""Variants of one fix: whose `Applies-To` ranges overlap, and which variant a version picks.

Each range is bounded once (`Bounds`: the least and the most a contained version's release
can be), so neither question compares every variant with every other: ranges whose bounds
are apart cannot share a version, and only pairs whose bounds meet are probed version by
version (`overlap_at`, the same probes and so the same answer as before). Sorted by their
lower bounds, variants with disjoint ranges (what a folder of variants is) give no such pair,
and a version finds its variant by bisection.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from patchkeeper.model.problems import Problem

if TYPE_CHECKING:
    from patchkeeper.patchset.load import PatchFile

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
    low: Point
    high: Point

    @property
    def empty(self) -> bool:
        return self.low > self.high

    def holds(self, point: Point) -> bool:
        return self.low <= point <= self.high


def bounds(spec_set: SpecifierSet | None) -> Bounds:
    """The bounds of every version SPEC_SET contains (None: every version); a specifier many
    variants share is bounded once."""
    low, high = _BELOW_ALL, _ABOVE_ALL
    for spec in spec_set or ():
        one_low, one_high = _specifier_bounds(spec.operator, spec.version)
        low, high = max(low, one_low), min(high, one_high)
    return Bounds(low, high)


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
    """A problem for each pair of VARIANTS (of one folder) whose ranges share a version."""
    problems = []
    pairs = meeting_pairs([bounds(v.applies_to) for v in variants])
    for i, j in pairs:
        first, second = variants[i], variants[j]
        both = overlap_at(first.applies_to, second.applies_to)
        if both is not None:
            problems.append(
                Problem(
                    second.path,
                    1,
                    f"Applies-To overlaps variant {first.path.name} (both contain {both}); "
                    "every variant in a folder needs its own range",
                )
            )
    return problems


# ---------------------------------------------------------------- choice


class VariantChoice:
    """Which of a fix's variants a version picks: the first, in folder order, that has no
    range or whose range contains the version; found among the few whose bounds hold it."""

    def __init__(self, variants: Sequence[PatchFile]) -> None:
        self._variants = variants
        self._bounds = [bounds(v.applies_to) for v in variants]
        order = sorted(range(len(variants)), key=lambda i: self._bounds[i].low)
        self._order = order
        self._lows = [self._bounds[i].low for i in order]
        self._reach: list[Point] = []  # the highest bound among order[: k + 1]
        for i in order:
            high = self._bounds[i].high
            self._reach.append(max(self._reach[-1], high) if self._reach else high)
        self._unversioned = next((v for v in variants if v.applies_to is None), None)
        self._chosen: dict[Version, PatchFile | None] = {}

    def __call__(self, version: Version | None) -> PatchFile | None:
        if version is None or (self._variants and self._variants[0] is self._unversioned):
            return self._unversioned  # a plain patch file: the one variant, whatever the version
        if version not in self._chosen:
            self._chosen[version] = self._choose(version)
        return self._chosen[version]

    def _choose(self, version: Version) -> PatchFile | None:
        point = release_point(version)
        candidates = []
        k = bisect.bisect_right(self._lows, point) - 1
        while k >= 0 and self._reach[k] >= point:
            if self._bounds[self._order[k]].holds(point):
                candidates.append(self._order[k])
            k -= 1
        for i in sorted(candidates):
            spec = self._variants[i].applies_to
            if spec is None or spec.contains(version, prereleases=True):
                return self._variants[i]
        return None
