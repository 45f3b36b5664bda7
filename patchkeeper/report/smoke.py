"""A smoke run's result (`SmokeReport`, proof/smoke/results.py) as text for people and as the
`--json` document of `smoke`: each check's verdict, steps and facts; its progress on stderr."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import click

from patchkeeper.proof.smoke.interpreter import interpreter_facts
from patchkeeper.proof.smoke.results import ERROR, FAIL, PASS, CheckResult, SmokeReport
from patchkeeper.report.render import paint, patch_json

if TYPE_CHECKING:  # the command that renders them has loaded them
    from patchkeeper.engine.patching import TreeReport
    from patchkeeper.patchset.model import PatchSet

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


def smoke_json(report: SmokeReport) -> dict[str, Any]:
    return {
        "python": interpreter_facts(report.python),
        "checks": [asdict(result) for result in report.results],
    }


def render_smoke(report: SmokeReport) -> None:
    if report.python.note:
        click.echo(f"note: {report.python.note}")
    for result in report.results:
        for line in result_lines(result):
            click.echo(line)
    if not report.results:
        click.echo("no smoke checks to run")


def echo_progress(name: str, text: str) -> None:
    click.echo(paint(f"  .. {name}: {text}", "bright_black"), err=True)


def proven_patches_json(tree: TreeReport, patch_set: PatchSet) -> list[dict[str, Any]]:
    """How each patch stands in the work tree (TREE, as `status` says), with the checks its
    `Smoke:` header names: which fix each check proves, and whether that fix is there to
    prove."""
    root = patch_set.root
    documents = []
    for result in tree.results:
        patch = patch_set.by_name(result.name)
        chosen = root / result.variant if result.variant else None
        named = [n for v in (patch.variants if patch else ()) if v.path == chosen for n in v.smoke]
        documents.append({**patch_json(result), "smoke": named})
    return documents
