"""What `leftovers` says: the list of what updates left behind, one leftover shown, restored
or dropped, as text for people and as the `--json` documents."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from patchkeeper.install.checkout.install import Install
from patchkeeper.install.writer.write_journal import interrupted_note
from patchkeeper.leftovers.find import Leftover
from patchkeeper.leftovers.heal import RestoreOutcome
from patchkeeper.leftovers.updater_refs import UpdaterBackup, describe
from patchkeeper.model import nextstep
from patchkeeper.report.render import leftover_json, updater_backup_json


def leftovers_json(items: list[Leftover], backups: list[UpdaterBackup]) -> dict[str, Any]:
    return {
        "leftovers": [leftover_json(i) for i in items],
        "updater_backups": [updater_backup_json(b) for b in backups],
        "patches": [],
    }


def render_leftovers(
    install_path: Path,
    items: list[Leftover],
    backups: list[UpdaterBackup],
    unfinished_run: str | None,
    interrupted_write: str | None,
) -> None:
    """The list: an unfinished update (UNFINISHED_RUN, its id) or an interrupted write of the
    work tree (INTERRUPTED_WRITE, the command) first, then each leftover and updater backup."""
    if unfinished_run is not None:
        click.echo(
            f"note: update {unfinished_run} is unfinished, and its refs hold your edits: "
            "`patchkeeper recover` settles it"
        )
    if interrupted_write is not None:
        click.echo(f"note: {interrupted_note(interrupted_write)}")
    if not items:
        click.echo(f"{install_path}: no leftovers")
    for item in items:
        held = f" ({', '.join(item.patches)})" if item.patches else ""
        click.echo(
            f"{item.id:<12} {item.age():>4}  {item.kind:<14} {item.classification}{held}"
            f"  {item.label}"
        )
        click.echo(f"{'':<12}       files: {', '.join(item.files) or '(none)'}")
        for note in item.notes:
            click.echo(f"{'':<12}       note: {note}")
    if backups:
        click.echo(describe(backups))
    for backup in backups:
        click.echo(f"  {backup.kind:<14} {backup.commit[:12]}  {backup.ref}")
        if backup.needs_a_person:
            click.echo(f"  {'':<14} look: {backup.inspect_command()}")
            click.echo(f"  {'':<14} keep: {backup.keep_command()}")
            click.echo(f"  {'':<14} then: {backup.delete_command()}")


def shown_json(item: Leftover, diff: bytes) -> dict[str, Any]:
    """`leftovers show --json`: the diff as text, bytes that are not UTF-8 replaced (U+FFFD)."""
    return {"leftover": leftover_json(item), "diff": diff.decode("utf-8", "replace")}


def render_shown_heading(item: Leftover) -> None:
    """`leftovers show`'s first line; the diff follows as git wrote it (`write_diff`)."""
    click.echo(f"# {item.id} {item.kind} {item.classification}: {item.label}")
    sys.stdout.flush()


def write_diff(diff: bytes) -> None:
    sys.stdout.buffer.write(diff)
    sys.stdout.buffer.flush()


def restored_json(item: Leftover, outcome: RestoreOutcome) -> dict[str, Any]:
    return {
        "leftover": leftover_json(item),
        "clean": outcome.clean,
        "written": outcome.written,
        "conflicts": outcome.conflicts,
        "backup_ref": outcome.backup_ref,
        "patches": [],
    }


def render_restored(
    install: Install, patch_root: Path, item: Leftover, outcome: RestoreOutcome, markers: bool
) -> None:
    """What a restore did, or why it wrote nothing and the commands that go on from there."""
    if not outcome.clean:
        conflicts = ", ".join(outcome.conflicts)
        if markers:
            click.echo(
                f"{item.id}: wrote {len(outcome.written)} file(s); resolve the conflict markers "
                f"in {conflicts}, then "
                + nextstep.command(
                    "leftovers", "drop", item.id, install=install.path, patches=patch_root
                )
            )
            return
        click.echo(f"{item.id}: would conflict in {conflicts}; nothing changed")
        show = nextstep.command(
            "leftovers", "show", item.id, install=install.path, patches=patch_root
        )
        click.echo(f"  see it: {show}")
        again = item.restore_command(install, markers=True, patches=patch_root)
        click.echo(f"  merge with conflict markers: {again}")
        return
    restored = ", ".join(outcome.written) or "(none)"
    click.echo(f"{item.id}: restored {len(outcome.written)} file(s): {restored}")
    click.echo(f"  the entry was removed; backup: {outcome.backup_ref}")


def dropped_json(item: Leftover, backup: str, undo: str) -> dict[str, Any]:
    return {"leftover": leftover_json(item), "backup_ref": backup, "undo": undo, "patches": []}


def render_dropped(item: Leftover, backup: str, undo: str) -> None:
    click.echo(f"{item.id}: dropped; backup: {backup}")
    click.echo(f"  undo: {undo}")
