"""Why a write the engine found clean does not stand: a 3-way merge the merge guard refuses
(`Refusal`, merge_guard.py), an apply at an offset the offset guard doubts (`OffsetDoubt`,
offset_guard.py). Made only when one is refused, so a check where every write stands never
loads them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Refusal:
    """Why a clean 3-way merge is not accepted: upstream has the change, or it is unclear."""

    has_it: bool
    detail: str


@dataclass(frozen=True)
class OffsetDoubt:
    """Why an apply at an offset does not stand. REVERSE: the patch's reverse applies at its
    own place; HAS_IT: every added block is there already, at its place; else unclear."""

    reverse: bool
    has_it: bool
    detail: str
