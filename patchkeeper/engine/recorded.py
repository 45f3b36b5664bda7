"""What the state says patchkeeper wrote for one patch: the input a classification of the
work tree gets (engine/patching.py), never made by a check of refs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Recorded:
    """What the state says patchkeeper wrote for one patch (work tree targets only)."""

    sha256: str
    diff: bytes
