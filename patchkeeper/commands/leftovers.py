"""`patchkeeper leftovers [show|restore|drop] [ID]`: what updates left behind, and healing it."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from patchkeeper.commands.common import (
    install_option,
    json_option,
    open_workspace,
    patches_option,
    wait_option,
)
from patchkeeper.commands.record import settled_notes
from patchkeeper.install.records import update_journal as jr
from patchkeeper.install.workspace import locked_for_writing
from patchkeeper.install.writer.write_journal import interrupted, interrupted_note
from patchkeeper.leftovers import find as lo
from patchkeeper.leftovers import heal
from patchkeeper.leftovers.updater_refs import describe, updater_backups
from patchkeeper.model import exitcodes, nextstep
from patchkeeper.model.errors import UserError
from patchkeeper.report.render import emit_json, leftover_json, updater_backup_json

ACTIONS = ("list", "show", "restore", "drop")


def list_leftovers(workspace, as_json: bool) -> int:
    items = lo.find_leftovers(workspace.install, workspace.patch_set)
    backups = updater_backups(workspace.install.path)
    rescue = [backup for backup in backups if backup.needs_a_person]
    unfinished = jr.load(workspace.install.state_dir)
    writer = interrupted(workspace.install.state_dir)
    # A parked stash, commits only a reset's rescue ref still holds, an unfinished update
    # (its refs hold the user's edits) or an interrupted write: never green.
    unsettled = unfinished is not None or writer is not None
    code = exitcodes.ATTENTION if items or rescue or unsettled else exitcodes.OK
    if as_json:
        emit_json(
            "leftovers",
            code,
            leftovers=[leftover_json(i) for i in items],
            updater_backups=[updater_backup_json(b) for b in backups],
            patches=[],
        )
        return code
    if unfinished is not None:
        click.echo(
            f"note: update {unfinished.id} is unfinished, and its refs hold your edits: "
            "`patchkeeper recover` settles it"
        )
    if writer is not None:
        click.echo(f"note: {interrupted_note(writer)}")
    if not items:
        click.echo(f"{workspace.install.path}: no leftovers")
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
    return code


def show(workspace, leftover_id: str, as_json: bool = False) -> int:
    item = lo.find_by_id(workspace.install, workspace.patch_set, leftover_id)
    if as_json:  # the diff as text: bytes that are not UTF-8 are replaced (U+FFFD)
        diff = heal.leftover_diff(workspace.install.path, item).decode("utf-8", "replace")
        emit_json("leftovers show", exitcodes.OK, leftover=leftover_json(item), diff=diff)
        return exitcodes.OK
    click.echo(f"# {item.id} {item.kind} {item.classification}: {item.label}")
    sys.stdout.flush()
    sys.stdout.buffer.write(heal.leftover_diff(workspace.install.path, item))
    sys.stdout.buffer.flush()
    return exitcodes.OK


def restore(
    workspace, leftover_id: str, markers: bool, as_json: bool, least: int = exitcodes.OK
) -> int:
    install = workspace.install
    patch_root = workspace.patch_set.root
    item = lo.find_by_id(install, workspace.patch_set, leftover_id)
    outcome = heal.restore(install, item, markers=markers)
    code = exitcodes.worst(least, exitcodes.OK if outcome.clean else exitcodes.ATTENTION)
    if as_json:
        emit_json(
            "leftovers restore",
            code,
            leftover=leftover_json(item),
            clean=outcome.clean,
            written=outcome.written,
            conflicts=outcome.conflicts,
            backup_ref=outcome.backup_ref,
            patches=[],
        )
        return code
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
            return code
        click.echo(f"{item.id}: would conflict in {conflicts}; nothing changed")
        show = nextstep.command(
            "leftovers", "show", item.id, install=install.path, patches=patch_root
        )
        click.echo(f"  see it: {show}")
        again = item.restore_command(install, markers=True, patches=patch_root)
        click.echo(f"  merge with conflict markers: {again}")
        return code
    restored = ", ".join(outcome.written) or "(none)"
    click.echo(f"{item.id}: restored {len(outcome.written)} file(s): {restored}")
    click.echo(f"  the entry was removed; backup: {outcome.backup_ref}")
    return code


def drop(workspace, leftover_id: str, as_json: bool, least: int = exitcodes.OK) -> int:
    item = lo.find_by_id(workspace.install, workspace.patch_set, leftover_id)
    backup = heal.drop(workspace.install, item)
    undo = heal.undo_command(workspace.install, item)
    if as_json:
        emit_json(
            "leftovers drop",
            least,
            leftover=leftover_json(item),
            backup_ref=backup,
            undo=undo,
            patches=[],
        )
    else:
        click.echo(f"{item.id}: dropped; backup: {backup}")
        click.echo(f"  undo: {undo}")
    return least


@click.command("leftovers")
@click.argument("action", type=click.Choice(ACTIONS), default="list")
@click.argument("leftover_id", metavar="[ID]", required=False)
@click.option(
    "--markers", is_flag=True, help="restore: write a conflicting merge too, with conflict markers."
)
@install_option
@patches_option
@wait_option
@json_option
def command(
    action: str,
    leftover_id: str | None,
    markers: bool,
    install_path: Path | None,
    patches_dir: Path | None,
    wait: float,
    as_json: bool,
) -> int:
    """List what updates left behind (parked stashes, autostash files, unmerged paths, edits
    patchkeeper could not restore), or show, restore or drop one by ID.

    Each leftover is classified by content: patch-content (only what patches add),
    user-content, or mixed. `restore` previews a 3-way merge with git merge-tree and writes
    only when it is clean (or, with --markers, writes conflict markers for you to resolve);
    `drop` saves a backup ref under refs/patchkeeper/dropped/ first.
    Listing exits 5 while anything is left behind.

    \b
    Examples:
      patchkeeper leftovers
      patchkeeper leftovers show 3f2a9c1d7e
      patchkeeper leftovers restore 3f2a9c1d7e
    """
    workspace = open_workspace(install_path, patches_dir)
    if action == "list":
        if leftover_id is not None:
            raise UserError(f"`patchkeeper leftovers list` takes no ID (got {leftover_id!r})")
        return list_leftovers(workspace, as_json)
    if leftover_id is None:
        raise UserError(
            f"`patchkeeper leftovers {action}` needs an ID (see `patchkeeper leftovers`)"
        )
    if action == "show":
        return show(workspace, leftover_id, as_json)
    with locked_for_writing(workspace, f"leftovers {action}", wait) as lock:
        notes, least = settled_notes(lock)
        for note in notes:  # stderr under --json: stdout holds one document
            click.echo(f"note: {note}", err=as_json)
        if action == "restore":
            return restore(workspace, leftover_id, markers, as_json, least)
        return drop(workspace, leftover_id, as_json, least)
