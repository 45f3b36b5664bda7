"""What a conflict's result says beyond its outcome: the hunks that fail and where the target
differs (engine/conflicts.py), and how much of the patch the target holds already
(engine/upstream_took.py). Loaded with the first conflict, not by a check where all apply.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mismatch:
    """One line where the target differs from what a hunk expected, at the closest match."""

    line: int
    expected: str
    found: str | None  # None: the file ends before this line


@dataclass(frozen=True)
class HunkConflict:
    """A hunk that does not apply: what it looked for, and where the target differs."""

    file: str
    hunk: int  # 1-based within the file; 0 when the whole file failed
    header: str
    expected: tuple[str, ...]  # the upstream lines the hunk looked for (context and removed)
    reason: str = ""
    mismatches: tuple[Mismatch, ...] = ()


@dataclass(frozen=True)
class HunkHeld:
    """One hunk of a conflicting patch measured against the target by content: its telling
    added lines that stand in the file, its telling removed lines that no longer do."""

    file: str
    hunk: int  # 1-based within the file
    added: int
    added_present: int
    removed: int
    removed_gone: int

    @property
    def held(self) -> bool:
        """At least TOOK_SHARE of the hunk's telling lines in place: the measure the whole
        patch is judged by, so "appears to have this (N of M hunks)" never reads 0 of M."""
        in_place = self.added_present + self.removed_gone
        return in_place >= TOOK_SHARE * (self.added + self.removed)


# Of a conflicting patch's telling lines (and of each hunk's), the share in place before
# upstream appears to have it (engine/upstream_took.py): what Debian's dropped patches showed.
TOOK_SHARE = 0.9


@dataclass(frozen=True)
class UpstreamTook:
    """How much of a patch that neither applies nor reverses the target already holds.

    APPEARS: upstream appears to have it (at least `TOOK_SHARE` of its telling lines in place,
    the measure issue 27 found Debian's dropped patches by); never a proof: the outcome stays
    `conflict`. FUZZ_APPLIES: quilt's fuzz (GNU patch --fuzz=2, `git apply -C1`) would apply
    it, a hint for the person porting it, never a write."""

    hunks: tuple[HunkHeld, ...]
    appears: bool
    fuzz_applies: bool

    @property
    def held(self) -> int:
        return sum(1 for hunk in self.hunks if hunk.held)

    def lines(self) -> tuple[int, int, int, int]:
        """(added present, added, removed gone, removed) over every hunk."""
        return (
            sum(h.added_present for h in self.hunks),
            sum(h.added for h in self.hunks),
            sum(h.removed_gone for h in self.hunks),
            sum(h.removed for h in self.hunks),
        )

    def qualifier(self) -> str:
        """What a report says after `conflict`: empty when upstream does not appear to have it."""
        if not self.appears:
            return ""
        return f"upstream appears to have this ({self.held} of {len(self.hunks)} hunks)"
