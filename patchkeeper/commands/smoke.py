"""`patchkeeper smoke`: run the patch set's smoke checks against the install."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from patchkeeper.commands.common import (
    install_option,
    json_option,
    metrics_option,
    open_workspace,
    patches_option,
    write_metrics,
)
from patchkeeper.install.workspace import Workspace
from patchkeeper.proof.smoke.catalog import select_checks
from patchkeeper.proof.smoke.interpreter import interpreter_facts
from patchkeeper.proof.smoke.results import ERROR, FAIL, PASS, CheckResult, SmokeReport
from patchkeeper.proof.smoke.suite import run_checks
from patchkeeper.report.render import emit_json, paint, patch_json

_WORDS = {
    PASS: ("pass", "green"),
    FAIL: ("FAIL", "red"),
    ERROR: ("could not check", "red"),
}


def verdict_word(verdict: str) -> str:
    word, colour = _WORDS[verdict]
    return paint(word, colour)


def _seconds(value: float | None) -> str:
    return f"{value:6.2f} s" if value is not None else "      -"


def _numbers(facts: dict[str, Any]) -> str:
    """The numeric facts a check reported, on one line (the rest is in --json)."""
    numbers = {k: v for k, v in facts.items() if isinstance(v, int | float)}
    return ", ".join(f"{k}={v:g}" for k, v in numbers.items() if not isinstance(v, bool))


def result_lines(result: CheckResult) -> list[str]:
    """How one check went: its verdict and time, each step with its time and detail."""
    head = f"{result.name}: {verdict_word(result.verdict)} in {result.seconds:.2f} s"
    lines = [head + (f"  ({result.detail})" if result.detail else "")]
    width = max((len(step.name) for step in result.steps), default=0)
    for step in result.steps:
        line = f"  {_seconds(step.seconds)}  {step.name:<{width}}  {verdict_word(step.verdict)}"
        lines.append(line + (f"  {step.detail}" if step.detail else ""))
    if _numbers(result.extra):
        lines.append(f"  facts: {_numbers(result.extra)}")
    return lines


def report_json(report: SmokeReport) -> dict[str, Any]:
    return {
        "python": interpreter_facts(report.python),
        "checks": [asdict(result) for result in report.results],
    }


def render(report: SmokeReport) -> None:
    if report.python.note:
        click.echo(f"note: {report.python.note}")
    for result in report.results:
        for line in result_lines(result):
            click.echo(line)
    if not report.results:
        click.echo("no smoke checks to run")


def echo_progress(name: str, text: str) -> None:
    click.echo(paint(f"  .. {name}: {text}", "bright_black"), err=True)


@click.command("smoke")
@install_option
@patches_option
@click.option("--check", "check_name", default=None, help="Run only this check (smoke/NAME.py).")
@json_option
@metrics_option
def command(
    install_path: Path | None,
    patches_dir: Path | None,
    check_name: str | None,
    as_json: bool,
    metrics_path: Path | None,
) -> int:
    """Run behavioural smoke checks against the install with its own interpreter.

    Each check runs upstream code with a fresh HERMES_HOME and HOME, never the operator's,
    in a scratch folder under the install's .git/patchkeeper/smoke/ (removed when the check
    ends). Exit 4 when a check fails or could not check (crash, timeout, bad output, missing
    upstream function).

    \b
    Example:
      patchkeeper smoke --check ledger_adoption
    """
    workspace = open_workspace(install_path, patches_dir)
    names = select_checks(workspace.patch_set, check_name)
    progress = None if as_json else echo_progress
    report = run_checks(
        workspace.install, workspace.settings, workspace.patch_set, names, progress
    )
    if metrics_path is not None:
        document = {"install": str(workspace.install.path), **report_json(report)}
        write_metrics(metrics_path, "smoke", report.exit_code, document)
    if as_json:
        emit_json(
            "smoke",
            report.exit_code,
            install=str(workspace.install.path),
            patch_set=workspace.patch_set_label,
            **report_json(report),
            patches=patches_json(workspace),
        )
    else:
        render(report)
    return report.exit_code


def patches_json(workspace: Workspace) -> list[dict[str, Any]]:
    """How each patch stands in the work tree (as `status` says), with the checks its `Smoke:`
    header names: which fix each check proves, and whether that fix is there to prove."""
    from patchkeeper.engine.patching import worktree_status

    tree = worktree_status(workspace.install, workspace.settings, workspace.patch_set)
    root = workspace.patch_set.root
    documents = []
    for result in tree.results:
        patch = workspace.patch_set.by_name(result.name)
        chosen = root / result.variant if result.variant else None
        named = [n for v in (patch.variants if patch else ()) if v.path == chosen for n in v.smoke]
        documents.append({**patch_json(result), "smoke": named})
    return documents
