"""The result model: how one patch stands against one target. Only report modules render it."""

from __future__ import annotations

from dataclasses import dataclass, field

APPLIED = "applied"
APPLIED_OFFSET = "applied-offset"
MERGED_3WAY = "merged-3way"
ALREADY_APPLIED = "already-applied"
UPSTREAM_HAS_IT = "upstream-has-it"
NOT_APPLICABLE = "not-applicable"
CONFLICT = "conflict"
INVALID = "invalid"
DRIFTED = "drifted"  # status only: applied by patchkeeper, edited by hand since
EXPIRED = "expired"  # was in place; no variant's Applies-To covers the version now
PENDING = "pending"  # status only: applies, but is not in the work tree yet

WRITES = (APPLIED, APPLIED_OFFSET, MERGED_3WAY)  # outcomes that change the target
NOTHING_TO_DO = (ALREADY_APPLIED, UPSTREAM_HAS_IT, NOT_APPLICABLE)  # nothing left to do
FAILED = (CONFLICT, INVALID)


@dataclass(frozen=True)
class HunkOffset:
    """A hunk that applied away from the line its header names."""

    file: str
    hunk: int
    line: int
    offset: int


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


@dataclass(frozen=True)
class VariantTrial:
    """One variant tried while a fix's variant was chosen by content, and how it fared."""

    variant: str  # its path in the patch set
    outcome: str
    detail: str


@dataclass(frozen=True)
class ContentChoice:
    """How a fix's variant was chosen by content (`Choose: by-content`): the variant kept
    (None: none, or more than one, applies), why, and every variant tried."""

    chosen: str | None
    reason: str
    version_known: bool
    tried: tuple[VariantTrial, ...]


@dataclass
class PatchResult:
    """How one patch stands against one target, and the details that say why."""

    name: str
    outcome: str
    variant: str | None = None
    detail: str = ""
    offsets: list[HunkOffset] = field(default_factory=list)
    merged_files: list[str] = field(default_factory=list)
    conflicts: list[HunkConflict] = field(default_factory=list)
    recorded: bool = False  # patchkeeper's state says it wrote this patch
    undecided: bool = False  # not-applicable only because the target's version is unknown
    # Scratch trees before and after this patch changed the target (None: it changed nothing).
    trees: tuple[str, str] | None = field(default=None, repr=False)
    notes: list[str] = field(default_factory=list)
    would: str | None = None  # pending: the outcome `apply` would have (applied, ...-offset)
    upstream_took: UpstreamTook | None = None  # conflict: how much of it the target holds
    variant_choice: ContentChoice | None = None  # set when the variant was chosen by content

    @property
    def in_place(self) -> bool:
        return self.outcome in NOTHING_TO_DO

    @property
    def needs_a_person(self) -> bool:
        """Not a failed apply, yet never green: edited by hand, expired, pending or undecided."""
        return self.outcome in (DRIFTED, EXPIRED, PENDING) or self.undecided
