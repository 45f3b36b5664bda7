"""`patchkeeper leftovers [show|restore|drop] [ID]`: what updates left behind, and healing it."""

from __future__ import annotations

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
from patchkeeper.install.writer.write_journal import interrupted
from patchkeeper.leftovers import find as lo
from patchkeeper.leftovers import heal
from patchkeeper.leftovers.updater_refs import updater_backups
from patchkeeper.model import exitcodes
from patchkeeper.model.errors import UserError
from patchkeeper.report import leftovers as said
from patchkeeper.report.render import emit_json

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
        emit_json("leftovers", code, **said.leftovers_json(items, backups))
        return code
    run = unfinished.id if unfinished is not None else None
    said.render_leftovers(workspace.install.path, items, backups, run, writer)
    return code


def show(workspace, leftover_id: str, as_json: bool = False) -> int:
    item = lo.find_by_id(workspace.install, workspace.patch_set, leftover_id)
    if as_json:
        diff = heal.leftover_diff(workspace.install.path, item)
        emit_json("leftovers show", exitcodes.OK, **said.shown_json(item, diff))
        return exitcodes.OK
    said.render_shown_heading(item)
    said.write_diff(heal.leftover_diff(workspace.install.path, item))
    return exitcodes.OK


def restore(
    workspace, leftover_id: str, markers: bool, as_json: bool, least: int = exitcodes.OK
) -> int:
    install = workspace.install
    item = lo.find_by_id(install, workspace.patch_set, leftover_id)
    outcome = heal.restore(install, item, markers=markers)
    code = exitcodes.worst(least, exitcodes.OK if outcome.clean else exitcodes.ATTENTION)
    if as_json:
        emit_json("leftovers restore", code, **said.restored_json(item, outcome))
    else:
        said.render_restored(install, workspace.patch_set.root, item, outcome, markers)
    return code


def drop(workspace, leftover_id: str, as_json: bool, least: int = exitcodes.OK) -> int:
    item = lo.find_by_id(workspace.install, workspace.patch_set, leftover_id)
    backup = heal.drop(workspace.install, item)
    undo = heal.undo_command(workspace.install, item)
    if as_json:
        emit_json("leftovers drop", least, **said.dropped_json(item, backup, undo))
    else:
        said.render_dropped(item, backup, undo)
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
