"""A port's result (`port/result.py`) as text for people and as the `--json` document."""

from __future__ import annotations

from typing import Any

import click

from patchkeeper.port.result import PortReport
from patchkeeper.port.state import KEEP, NEW_VARIANT, REFRESH, RETIRE, WIDEN, Decision
from patchkeeper.report.render import emit_json

_WORDS = {
    KEEP: "nothing to do",
    WIDEN: "range widened",
    NEW_VARIANT: "new variant",
    REFRESH: "refreshed",
    RETIRE: "retire",
}
_PROOF_WORDS = {
    "proven": "proven: its smoke check passed on the ported tree",
    "failed": "NOT proven: its smoke check FAILED on the ported tree",
    "unproven": "not proven: its smoke check could not run on the ported tree",
    "no-check": "not proven: no smoke check names it",
}


def _decision_lines(decision: Decision, proof: str | None) -> list[str]:
    word = _WORDS.get(decision.action, decision.action)
    lines = [f"  {decision.name:<18} {word}"]
    if decision.action == NEW_VARIANT:
        lines.append(
            f"      wrote {decision.written or '(a new variant)'}: Applies-To {decision.applies_to}"
        )
        lines.append(f"      {decision.variant}: Applies-To {decision.old_applies_to or 'all'}")
    elif decision.action in (WIDEN, REFRESH) and decision.written:
        lines.append(f"      wrote {decision.written}: Applies-To {decision.applies_to or 'all'}")
    lines.append(f"      {decision.evidence}")
    if decision.action == RETIRE:
        lines.append(
            "      the file stays: drop it from series once every install runs such a release"
        )
    if proof is not None:
        lines.append(f"      {_PROOF_WORDS.get(proof, proof)}")
    return lines


def render_text(report: PortReport) -> None:
    click.echo(
        f"port onto {report.onto} ({report.commit[:12]}, release {report.version}): {report.status}"
    )
    for decision in report.decisions:
        for line in _decision_lines(decision, report.proofs.get(decision.name)):
            click.echo(line)
    if report.conflict is not None:
        conflict = report.conflict
        click.echo(f"  {conflict.name:<18} conflict")
        for path in conflict.files:
            mark = "conflict markers" if path in conflict.marked else "the patch applied"
            click.echo(f"      {report.worktree}/{path}: {mark}")
        click.echo(f"      the markers' middle part: {conflict.source}")
    for check in report.checks:
        detail = f" ({check.detail})" if check.detail else ""
        click.echo(f"smoke {check.name}: {check.verdict}{detail}")
    if report.proof_note and report.status == "ported":
        click.echo(f"smoke checks: {report.proof_note}")
    for note in report.notes:
        click.echo(f"note: {note}")
    if report.next_step:
        click.echo(f"next: {report.next_step}")


def decision_json(decision: Decision, proof: str | None) -> dict[str, Any]:
    return {
        "name": decision.name,
        "action": decision.action,
        "variant": decision.variant,
        "outcome": decision.outcome,
        "evidence": decision.evidence,
        "applies_to": decision.applies_to,
        "old_applies_to": decision.old_applies_to,
        "written": decision.written,
        "smoke": decision.smoke,
        "proof": proof,
    }


def emit(report: PortReport) -> None:
    conflict = None
    if report.conflict is not None:
        conflict = {
            "name": report.conflict.name,
            "variant": report.conflict.variant,
            "files": report.conflict.files,
            "marked": report.conflict.marked,
            "source": report.conflict.source,
            "worktree": report.worktree,
        }
    smoke = None
    if report.proof_note:
        smoke = {
            "note": report.proof_note,
            "checks": [
                {"name": c.name, "verdict": c.verdict, "detail": c.detail} for c in report.checks
            ],
        }
    emit_json(
        "port",
        report.exit_code,
        status=report.status,
        onto=report.onto,
        commit=report.commit,
        version=report.version,
        patch_set=report.patch_set,
        out=report.out,
        patches=[decision_json(d, report.proofs.get(d.name)) for d in report.decisions],
        conflict=conflict,
        smoke=smoke,
        next_step=report.next_step,
        notes=report.notes,
    )
