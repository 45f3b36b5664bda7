"""The doctor's timeout-budget question: the smoke checks run with `--probe` (which only reads)
and the chain they measure is judged, first cause first."""

from __future__ import annotations

from typing import Any

from patchkeeper.model import exitcodes
from patchkeeper.proof.doctor.finding import DoctorContext, Finding
from patchkeeper.proof.smoke.results import ERROR, FAIL, SmokeReport
from patchkeeper.proof.smoke.suite import run_checks

PROBE_ARGS = ("--probe",)
PROBE_TIMEOUT = 60.0  # a probe only reads; it gets at most this (or [smoke] timeout if lower)


def _probe_names(context: DoctorContext) -> list[str]:
    named = [name for p in context.patch_set.patches for v in p.variants for name in v.smoke]
    return list(dict.fromkeys([*named, *context.settings.smoke_checks]))


def budget_finding(context: DoctorContext) -> Finding:
    """Run the path every smoke check the patch set relies on probes (`--probe`: the
    launcher and the worker, no stall) and judge the chain from what it measured."""
    names = _probe_names(context)
    if not names:
        return Finding("timeout budget", True, "no smoke check names a budget to read")
    timeout = min(PROBE_TIMEOUT, context.settings.smoke_timeout)
    report = run_checks(
        context.install,
        context.settings,
        context.patch_set,
        names,
        args=PROBE_ARGS,
        timeout=timeout,
    )
    details: list[str] = []
    for result in report.results:
        if result.verdict == ERROR and not result.steps:
            details.append(f"{result.name}: could not check: {_without_prefix(result.detail)}")
        details += [f"{result.name}: {s.name}: {s.verdict}, {s.detail}" for s in result.steps]
    facts = {result.name: result.extra for result in report.results}
    ok = report.exit_code == exitcodes.OK
    summary = f"chain holds{_figures(facts)}" if ok else _budget_cause(report, facts)
    return Finding("timeout budget", ok, summary, details, facts)


def _without_prefix(detail: str) -> str:
    return detail.removeprefix("could not check: ")


def _budget_cause(report: SmokeReport, facts: dict[str, dict[str, Any]]) -> str:
    """Why the chain could not be judged or does not hold, first cause first: the
    interpreter, then what the path raised (a name it lacks), then the failing figures."""
    python = report.python
    if not python.found or not python.installs_own:
        return f"could not check: interpreter: {python.note}; the chain was not judged"
    for result in report.results:
        broken = [s for s in result.steps if s.verdict == ERROR]
        if result.verdict == ERROR and (broken or not result.steps or result.detail):
            cause = broken[0].detail if broken else result.detail
            return f"could not check: {result.name}: {_without_prefix(cause)}"
    failing = [s.name for r in report.results for s in r.steps if s.verdict == FAIL]
    return f"chain does NOT hold{_figures(facts)} (failing: {'; '.join(failing)})"


def _figures(facts: dict[str, dict[str, Any]]) -> str:
    """': NUMBERS' when a check reported them in the common vocabulary (seconds), else ''."""
    words = {
        "gateway_wait_seconds": "gateway waits",
        "grace_seconds": "grace",
        "retry_budget_seconds": "retry budget",
        "stop_margin_seconds": "stop margin",
        "busy_timeout_seconds": "busy timeout",
    }
    numbers = []
    for check_facts in facts.values():
        present = [(key, label) for key, label in words.items() if key in check_facts]
        numbers += [f"{label} {check_facts[key]:g} s" for key, label in present]
    return f": {', '.join(numbers)}" if numbers else ""
