"""The result model: how one patch stands against one target. Only report modules render it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from patchkeeper.model.conflict_details import HunkConflict, UpstreamTook  # conflicts'
    from patchkeeper.model.content_choice import ContentChoice  # by_content's, when chosen

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
