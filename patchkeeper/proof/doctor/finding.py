"""A doctor's finding, the report of all of them, and what the questions are asked about."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchkeeper.install.checkout.install import Install
from patchkeeper.model import exitcodes
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.model import PatchSet
from patchkeeper.patchset.settings import Settings


@dataclass
class Finding:
    """One of doctor's questions and its answer."""

    name: str
    ok: bool
    summary: str
    details: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass
class DoctorReport:
    """Every finding of `doctor` on one install."""

    install_path: Path
    findings: list[Finding]
    patches: list[PatchResult] = field(default_factory=list)  # how each stands (`status`)

    @property
    def exit_code(self) -> int:
        return exitcodes.OK if all(f.ok for f in self.findings) else exitcodes.ATTENTION


@dataclass(frozen=True)
class DoctorContext:
    """What the questions about the patch set are asked of: its settings, itself, the install."""

    settings: Settings
    patch_set: PatchSet
    install: Install
