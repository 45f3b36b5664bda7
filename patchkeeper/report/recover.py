"""What `recover` says: what it did, the update's or the work tree's report after it, and the
result line, which claims everything is in place only when the exit code says so."""

from __future__ import annotations

from typing import Any

import click

from patchkeeper.report.tree import render_tree, tree_json
from patchkeeper.report.update import render_update, update_json
from patchkeeper.update.recovery import NEW, NOTHING, OLD, RecoverReport

_WHERE = {OLD: "the install is back at the old version", NEW: "the install is at the new version"}
_ALL_THERE = {OLD: "with its patches and your edits", NEW: "with the patches and your edits"}


def meaning(report: RecoverReport, code: int) -> str:
    """The result line: it claims everything is in place only when the exit code says so, and
    never calls the install updated when the update did not happen."""
    direction, update = report.direction, report.update
    if direction == NOTHING:
        return "nothing to recover" if code == 0 else f"see above (exit {code})"
    if update is None and report.not_done:
        return (
            f"the update did not happen: {report.not_done}; the install is back at the old "
            f"version, with its patches and your edits as they were (exit {code}); retry: "
            f"{report.retry}"
        )
    if update is not None and not update.finished:
        return f"the update is not finished (exit {code}): see above"
    if update is not None and update.not_done and update.rolled_back:
        return (
            f"the update did not happen: {update.not_done}; the install is back at the old "
            f"version, with its patches and your edits as they were (exit {code}); retry: "
            f"{update.retry}"
        )
    if update is not None and update.not_done:
        return f"the update did not finish: {update.not_done} (exit {code}); see above"
    if code == 0:
        return f"{_WHERE[direction]}, {_ALL_THERE[direction]}"
    return f"{_WHERE[direction]}, but not everything is in place (exit {code}): see above"


def after_json(report: RecoverReport) -> dict[str, Any]:
    """The update's document (when it was finished or rolled back) or the work tree's: what
    `--metrics` reads."""
    document: dict = {}
    if report.update is not None:
        document = update_json(report.update)
    elif report.tree is not None:
        document = tree_json(report.tree)
    document.setdefault("patches", [])
    return document


def recovered_json(report: RecoverReport, code: int, after: dict[str, Any]) -> dict[str, Any]:
    """The document: the direction, the result line and the actions, then AFTER."""
    return {
        "direction": report.direction,
        "meaning": meaning(report, code),
        "actions": report.actions,
        **after,
    }


def render_recovered(report: RecoverReport, code: int) -> None:
    for action in report.actions:
        click.echo(f"recover: {action}")
    if report.update is not None:
        render_update(report.update)
    elif report.tree is not None:
        render_tree(report.tree, "status after recover")
    click.echo(f"result: {meaning(report, code)}")
