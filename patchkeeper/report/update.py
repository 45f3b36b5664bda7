"""An update's result (`UpdateReport`, update/report.py) as text for people and as the
`--json` document: what `update`, `recover` and `demo` print about a run."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import click

from patchkeeper.report.render import leftover_json, patch_json, patch_lines, smoke_line
from patchkeeper.update.report import LeftoverAction, UpdateReport


def leftover_action_json(action: LeftoverAction) -> dict[str, Any]:
    return {
        **leftover_json(action.leftover),
        "action": action.action,
        "detail": action.detail,
        "backup_ref": action.backup_ref,
        "command": action.command,
    }


def update_json(report: UpdateReport) -> dict[str, Any]:
    upstream = report.upstream
    return {
        "run": report.run_id,
        "finished": report.finished,
        "update_done": report.update_done,
        "not_done": report.not_done,
        "rolled_back": report.rolled_back,
        "retry": report.retry,
        "install": {
            "path": str(report.install.path),
            "head_before": report.head_before,
            "head_after": report.head_after,
            "version_before": report.version_before,
            "version_before_from": report.version_before_from,
            "version_before_not_from": report.version_before_not_from,
            "version_after": report.version_after,
            "version_after_from": report.version_after_from,
            "version_after_not_from": report.version_after_not_from,
        },
        "patch_set": report.patch_set,
        "phases": [asdict(p) for p in report.phases],
        "preview": None
        if report.preview is None
        else {
            "ref": report.preview.ref,
            "commit": report.preview.commit,
            "patches": [patch_json(r) for r in report.preview.results],
            "fetched": report.preview_fetch is not None and report.preview_fetch.fetched,
        },
        "preview_fetch": None if report.preview_fetch is None else report.preview_fetch.as_json(),
        "upstream": None if upstream is None else {**asdict(upstream), "ok": upstream.ok},
        "leftovers": [leftover_action_json(a) for a in report.leftovers],
        "patches": [patch_json(r) for r in report.patch_results],
        "restore": None if report.restore is None else asdict(report.restore),
        "smoke": asdict(report.smoke),
        "post": [{**asdict(p), "ok": p.ok} for p in report.post],
        "attention": report.attention,
        "notes": report.notes,
    }


def _leftover_lines(report: UpdateReport) -> list[str]:
    lines = []
    for action in report.leftovers:
        item = action.leftover
        lines.append(
            f"  {item.id:<12} {item.kind:<14} {item.classification:<13} {action.action}"
            f"  {item.label}"
        )
        if action.detail:
            lines.append(f"      {action.detail}")
        if action.backup_ref:
            lines.append(f"      backup: {action.backup_ref}; undo: {action.command}")
        elif action.command:
            lines.append(f"      restore: {action.command}")
    return lines or ["  none"]


def render_update(report: UpdateReport) -> None:
    echo = click.echo
    echo("")
    echo(f"update {report.run_id}")
    echo(f"  install  {report.install.path}")
    after = report.version_after or "?"
    echo(f"  version  {report.version_before} -> {after}")
    echo(f"  HEAD     {report.head_before[:12]} -> {(report.head_after or '?')[:12]}")
    if report.patch_set:
        echo(f"  set      {report.patch_set}")
    if report.upstream is not None:
        echo(f"  upstream {' '.join(report.upstream.command)}: {report.upstream.describe()}")
    echo("patches:" if report.tree or not report.preview else f"patches on {report.preview.ref}:")
    for result in report.patch_results:
        for line in patch_lines(result):
            echo(line)
    echo("leftovers:")
    for line in _leftover_lines(report):
        echo(line)
    if report.restore is not None and report.restore.ref:
        echo(f"your edits: restored {len(report.restore.restored)} file(s)")
        for kept in report.restore.kept:
            echo(f"  kept in {report.restore.ref}: {kept.path}")
            echo(f"      see your edit: {kept.show}")
        if report.restore.kept:
            echo(f"  merge them with conflict markers: {report.restore.command}")
    echo(smoke_line(report.smoke.status, report.smoke.detail, report.patch_results))
    for post in report.post:
        echo(f"post: {' '.join(post.command)}: {post.describe()}")
    for note in report.notes:
        echo(f"note: {note}")
    for item in report.attention:
        echo(f"needs you: {item}")
    if not report.finished:
        echo("the update is not finished: run `patchkeeper recover` when the above is resolved")
