"""The doctor's answer (`DoctorReport`, proof/doctor/finding.py) as text for people and as the
`--json` document: each finding ok or FAIL, and whether the install is safe to update."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import click

from patchkeeper.proof.doctor.finding import DoctorReport
from patchkeeper.report.render import paint, patch_json


def doctor_json(report: DoctorReport) -> dict[str, Any]:
    return {
        "install": str(report.install_path),
        "findings": [asdict(f) for f in report.findings],
        "patches": [patch_json(result) for result in report.patches],
    }


def render_doctor(report: DoctorReport) -> None:
    click.echo(f"doctor: {report.install_path}")
    width = max(len(f.name) for f in report.findings)
    for finding in report.findings:
        word = paint("ok  ", "green") if finding.ok else paint("FAIL", "red")
        click.echo(f"  {word}  {finding.name:<{width}}  {finding.summary}")
        for detail in finding.details:
            click.echo(f"        {'':<{width}}  {detail}")
    failing = [f.name for f in report.findings if not f.ok]
    if failing:
        click.echo(f"safe to update unattended: no ({', '.join(failing)})")
    else:
        click.echo("safe to update unattended: yes")
