"""`patchkeeper doctor`: one screen that says whether the install is safe to update unattended."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import click

from patchkeeper.bundled import bundled_patches
from patchkeeper.commands.common import bundled_patches_option, install_option, json_option
from patchkeeper.doctor import DoctorReport, diagnose
from patchkeeper.report import emit_json, paint, patch_json


def render(report: DoctorReport) -> None:
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


@click.command("doctor")
@install_option
@bundled_patches_option
@json_option
def command(install_path: Path | None, patches_dir: Path | None, as_json: bool) -> int:
    """Say whether the install is safe to update unattended; exit 0 only when all hold.

    Checks: install and interpreter found; no merge in progress and no leftovers; the patch
    set lints; every patch in place; the timeout budget the smoke checks read from the install
    (`--probe`) holds; the last update ended well.

    It changes nothing in the install, but it runs things: [install] version_command (when
    set), the interpreter (to print its version), and it runs every smoke check the patch set
    names with `--probe`, which imports upstream code under the install's interpreter to read
    the budget (with a scratch HOME under .git/patchkeeper/smoke/, removed afterwards).

    \b
    Example:
      patchkeeper doctor --install ~/.hermes/hermes-agent
    """
    report = diagnose(install_path, (patches_dir or bundled_patches()).expanduser())
    if as_json:
        findings = [asdict(f) for f in report.findings]
        emit_json(
            "doctor",
            report.exit_code,
            install=str(report.install_path),
            findings=findings,
            patches=[patch_json(result) for result in report.patches],
        )
    else:
        render(report)
    return report.exit_code
