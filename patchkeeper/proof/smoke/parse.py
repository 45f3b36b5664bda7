"""Reading what a check printed into its result; anything doubtful is `error`.

A check prints one JSON verdict on stdout:
    {"check": NAME, "verdict": "pass"|"fail"|"error",
     "steps": [{"name", "verdict", "detail", "seconds"}, ...], ...any other facts}
Anything else (a crash, a timeout, output that is not a verdict, a "pass" with a failing step or
a non-zero exit) is `error`: "could not check", which is never a pass.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from patchkeeper.proof.smoke.results import (
    ERROR,
    PASS,
    VERDICTS,
    CheckResult,
    Step,
    worst_verdict,
)


@dataclass(frozen=True)
class CheckOutput:
    """What a check's process left: how it ended, its stdout, the tail of its stderr."""

    returncode: int | None  # None: killed at the timeout
    stdout: str
    stderr_tail: tuple[str, ...]
    seconds: float


def _why_crashed(run: CheckOutput) -> str:
    last = run.stderr_tail[-1] if run.stderr_tail else "no output"
    return f"crashed (exit {run.returncode}): {last}"


def _json_document(stdout: str) -> dict[str, Any] | None:
    """The verdict: all of stdout, else its last non-empty line (upstream code may print)."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    for text in (stdout, lines[-1] if lines else ""):
        try:
            document = json.loads(text)
        except ValueError:
            continue
        if isinstance(document, dict):
            return document
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _parse_step(raw: Any) -> Step | str:
    """A step, or why it is not one."""
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        return "a step without a name"
    if raw.get("verdict") not in VERDICTS:
        return f"step {raw['name']!r} has verdict {raw.get('verdict')!r}"
    known = {"name", "verdict", "detail", "seconds"}
    return Step(
        name=raw["name"],
        verdict=raw["verdict"],
        detail=str(raw.get("detail") or ""),
        seconds=_number(raw.get("seconds")),
        extra={k: v for k, v in raw.items() if k not in known},
    )


def parse_verdict(name: str, run: CheckOutput) -> CheckResult:
    """Turn what the check printed into a result; anything doubtful is `error`."""
    seconds = round(run.seconds, 3)

    def error(detail: str) -> CheckResult:
        return CheckResult(name, ERROR, seconds, detail=detail)

    if run.returncode is None:
        return error(f"timed out after {seconds:.1f} s")
    document = _json_document(run.stdout)
    if document is None:
        return error(_why_crashed(run) if run.returncode else "printed no JSON verdict")
    if document.get("verdict") not in VERDICTS:
        return error(f"bad verdict {document.get('verdict')!r} (expected pass, fail or error)")
    raw_steps = document.get("steps", [])
    if not isinstance(raw_steps, list):
        return error("bad verdict: 'steps' is not a list")
    steps = [_parse_step(raw) for raw in raw_steps]
    bad = next((s for s in steps if isinstance(s, str)), None)
    if bad is not None:
        return error(f"bad verdict: {bad}")
    parsed = tuple(s for s in steps if isinstance(s, Step))
    verdict = worst_verdict([document["verdict"], *(s.verdict for s in parsed)])
    detail = str(document.get("detail") or "")
    if verdict == PASS and run.returncode != 0:
        verdict, detail = ERROR, f"said pass but exited {run.returncode}"
    extra = {k: v for k, v in document.items() if k not in {"check", "verdict", "steps", "detail"}}
    return CheckResult(name, verdict, seconds, parsed, detail, extra)
