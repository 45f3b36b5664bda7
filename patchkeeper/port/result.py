"""What a port reports: the result model `report/port.py` renders as text and JSON."""

from __future__ import annotations

from dataclasses import dataclass, field

from patchkeeper.model import exitcodes
from patchkeeper.port.state import Conflict, Decision
from patchkeeper.proof.smoke.results import CheckResult

PORTED = "ported"  # the set is ported (in place, or in --out)
STOPPED = "stopped"  # at a conflict, for a hand fix
ABORTED = "aborted"  # the port's state removed, the set as it was

FAILED_PROOFS = ("failed", "unproven")


@dataclass
class PortReport:
    """One `port` invocation's outcome."""

    status: str
    onto: str
    commit: str
    version: str
    patch_set: str
    out: str | None = None
    decisions: list[Decision] = field(default_factory=list)
    conflict: Conflict | None = None
    worktree: str | None = None
    proofs: dict[str, str] = field(default_factory=dict)
    checks: list[CheckResult] = field(default_factory=list)
    proof_note: str = ""
    next_step: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """3 stopped at a conflict; 4 ported, but a fix's smoke check failed or could not
        prove it; 0 otherwise (ported with every check passing, or aborted)."""
        if self.status == STOPPED:
            return exitcodes.PATCH_FAILED
        if self.status == PORTED and any(p in FAILED_PROOFS for p in self.proofs.values()):
            return exitcodes.SMOKE_FAILED
        return exitcodes.OK
