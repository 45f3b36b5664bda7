"""The verdicts of smoke checks and the results they make: a step, a check, a set of checks.

The vocabulary every part of the proof speaks (`pass`, `fail`, `error`: "could not check",
which is never a pass) and how verdicts combine; the types the reports read. Nothing here runs
or parses anything.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from patchkeeper.model import exitcodes
from patchkeeper.proof.smoke.interpreter import Interpreter

PASS, FAIL, ERROR = "pass", "fail", "error"
VERDICTS = (PASS, FAIL, ERROR)


@dataclass(frozen=True)
class Step:
    """One step a smoke check reported."""

    name: str
    verdict: str
    detail: str = ""
    seconds: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CheckResult:
    """One smoke check's verdict, with its steps."""

    name: str
    verdict: str
    seconds: float
    steps: tuple[Step, ...] = ()
    detail: str = ""  # why it is an error, or the check's own summary
    extra: dict[str, Any] = field(default_factory=dict)  # other facts the verdict carried


@dataclass(frozen=True)
class SmokeReport:
    """Every smoke check's verdict, and the interpreter they ran with."""

    python: Interpreter
    results: tuple[CheckResult, ...]

    @property
    def exit_code(self) -> int:
        """4 when any check failed or could not check; 0 when all passed (or none ran)."""
        failed = any(r.verdict != PASS for r in self.results)
        return exitcodes.SMOKE_FAILED if failed else exitcodes.OK


def worst_verdict(verdicts: Iterable[str]) -> str:
    """`fail` outranks `error` (could not check), which outranks `pass`: a real failure is
    never reported as "could not check" because another part could not run."""
    found = set(verdicts)
    return FAIL if FAIL in found else ERROR if ERROR in found else PASS
