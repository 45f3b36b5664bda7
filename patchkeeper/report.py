"""Results -> text for people and JSON documents for machines. No logic about outcomes here."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import click

from patchkeeper import outcomes as oc
from patchkeeper.outcomes import PatchResult

if TYPE_CHECKING:
    from patchkeeper.leftovers import Leftover
    from patchkeeper.updater_refs import UpdaterBackup

SCHEMA = "patchkeeper/1"

_COLOURS = {
    oc.APPLIED: "green",
    oc.APPLIED_OFFSET: "green",
    oc.MERGED_3WAY: "yellow",
    oc.ALREADY_APPLIED: "green",
    oc.UPSTREAM_HAS_IT: "cyan",
    oc.NOT_APPLICABLE: "bright_black",
    oc.CONFLICT: "red",
    oc.INVALID: "red",
    oc.DRIFTED: "yellow",
    oc.EXPIRED: "yellow",
    oc.PENDING: "yellow",
}


def use_colour() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def paint(text: str, colour: str | None) -> str:
    return click.style(text, fg=colour) if colour and use_colour() else text


def outcome_word(outcome: str) -> str:
    return paint(outcome, _COLOURS.get(outcome))


def patch_json(result: PatchResult) -> dict[str, Any]:
    return {
        "name": result.name,
        "outcome": result.outcome,
        "variant": result.variant,
        "in_place": result.in_place,
        "recorded": result.recorded,
        "undecided": result.undecided,
        "would": result.would,
        "detail": result.detail,
        "offsets": [asdict(o) for o in result.offsets],
        "merged_files": result.merged_files,
        "conflicts": [asdict(c) for c in result.conflicts],
        "notes": result.notes,
    }


def updater_backup_json(backup: UpdaterBackup) -> dict[str, Any]:
    return {
        "ref": backup.ref,
        "commit": backup.commit,
        "kind": backup.kind,
        "needs_a_person": backup.needs_a_person,
        "commands": [backup.inspect_command(), backup.keep_command(), backup.delete_command()]
        if backup.needs_a_person
        else [],
    }


def leftover_json(item: Leftover) -> dict[str, Any]:
    return {
        "id": item.id,
        "kind": item.kind,
        "label": item.label,
        "age": item.age(),
        "created": item.created,
        "files": item.files,
        "classification": item.classification,
        "patches": item.patches,
        "notes": item.notes,
    }


def emit_json(command: str, exit_code: int, **fields: Any) -> None:
    document = {"schema": SCHEMA, "command": command, "exit_code": exit_code, **fields}
    click.echo(json.dumps(document, indent=2, default=str))


def patch_lines(
    result: PatchResult, *, width: int = 24, indent: str = "  ", colour: bool = True
) -> list[str]:
    """The lines that say how one patch stands: outcome, detail, offsets, failed hunks."""
    word = outcome_word(result.outcome) if colour else result.outcome
    head = f"{indent}{result.name:<{width}} {word}"
    if result.detail:
        head += f"  ({result.detail})"
    lines = [head]
    more = indent + "    "
    lines += [f"{more}{offset.file}: hunk #{offset.hunk} at line {offset.line}, "
              f"offset {offset.offset:+d}" for offset in result.offsets]  # fmt: skip
    if result.merged_files:
        lines.append(f"{more}3-way merged: {', '.join(result.merged_files)}")
    for conflict in result.conflicts:
        where = f"hunk #{conflict.hunk} ({conflict.header})" if conflict.hunk else "whole file"
        lines.append(f"{more}{conflict.file}: {where}: {conflict.reason}")
        for miss in conflict.mismatches:
            found = "the file ends" if miss.found is None else f"upstream has {miss.found!r}"
            lines.append(f"{more}  line {miss.line}: expected {miss.expected!r}, {found}")
        if conflict.expected and not conflict.mismatches:
            lines.append(f"{more}  expected upstream lines (none found nearby):")
            lines += [f"{more}  | {line}" for line in conflict.expected]
    lines += [f"{more}note: {note}" for note in result.notes]
    return lines
