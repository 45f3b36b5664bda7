"""How a fix's variant was chosen by content (`Choose: by-content`, engine/by_content.py): a
result's `variant_choice`. Loaded only by a patch set that chooses so, not by every check.
"""

from __future__ import annotations

from dataclasses import dataclass


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
