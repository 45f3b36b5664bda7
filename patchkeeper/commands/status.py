"""`patchkeeper status`: how every patch stands in the install's work tree right now."""

from __future__ import annotations

from pathlib import Path

import click

from patchkeeper.commands.common import (
    install_option,
    json_option,
    metrics_option,
    open_workspace,
    patches_option,
    write_metrics,
)
from patchkeeper.engine.patching import TreeReport, worktree_status
from patchkeeper.install.records import update_journal as jr
from patchkeeper.install.records.applied import load_applied
from patchkeeper.install.records.last_update import last_update
from patchkeeper.install.workspace import Workspace
from patchkeeper.install.writer.write_journal import interrupted, interrupted_note
from patchkeeper.leftovers.find import find_leftovers, note_leftovers
from patchkeeper.model import exitcodes, nextstep
from patchkeeper.model.verdict import tree_exit_code
from patchkeeper.proof.smoke.proven import status_notes
from patchkeeper.report.render import emit_json
from patchkeeper.report.tree import render_tree, tree_json
from patchkeeper.update.context import UpdateOptions, retry_command


def note_next_steps(report: TreeReport, workspace: Workspace) -> None:
    """A line for every patch that needs a person, naming the command that settles it."""
    root, install = workspace.patch_set.root, workspace.install.path
    advice = ""
    if any(r.undecided for r in report.results):
        from patchkeeper.install.checkout.version_chain import unknown_version_advice

        advice = unknown_version_advice(install, report.version, workspace.settings)
    report.notes += [
        step
        for r in report.results
        if (step := nextstep.for_patch(r, install, root, advice)) is not None
    ]


def note_leftovers_in(report: TreeReport, workspace: Workspace) -> None:
    """What updates left behind, each with the command that restores it (never green)."""
    leftovers = find_leftovers(workspace.install, workspace.patch_set)
    note_leftovers(report.results, leftovers)
    report.notes += [
        f"leftover {item.summary()}; restore: "
        + item.restore_command(workspace.install, patches=workspace.patch_set.root)
        if item.rev is not None
        else f"leftover {item.summary()}"
        for item in leftovers
    ]


def update_not_done(workspace: Workspace) -> str | None:
    """The last update did not happen (or did not finish), and HEAD is still where that run
    left it: the version asked for is not what runs. Its retry command goes with it."""
    last = last_update(workspace.install.state_dir)
    if last is None or not last.not_done:
        return None
    if workspace.install.head() != last.head_after:
        return None  # something updated the install since
    retry = last.retry or retry_command(workspace, UpdateOptions())
    return (
        f"update {last.id} did not {last.missed}: {last.not_done}; the install is at "
        f"{(last.head_after or '?')[:12]}; retry: {retry}"
    )


def unfinished_note(workspace: Workspace, journal: jr.Journal) -> str:
    """The journal's update: still running (its process holds the lock: wait for it), or
    stopped (killed, a crash: `recover` finishes it)."""
    from patchkeeper.install.locks.install_lock import live_owner  # a journal is rare

    owner = live_owner(workspace.install.state_dir)
    if owner is not None and owner.pid == journal.pid:
        return (
            f"update {journal.id} is running, held by {owner.describe()}: the tree is "
            "between versions until it ends; run status again then"
        )
    return (
        f"update {journal.id} stopped in phase {journal.phase_label}: "
        "the tree is between versions; run `patchkeeper recover`"
    )


@click.command("status")
@install_option
@patches_option
@json_option
@metrics_option
def command(
    install_path: Path | None, patches_dir: Path | None, as_json: bool, metrics_path: Path | None
) -> int:
    """Show each patch's outcome against the install's current work tree.

    A patch that is not applied yet shows what `apply` would do; `drifted` means patchkeeper
    applied it and it was edited by hand since. Exit 0 only when every applicable patch is
    in place and proven: its smoke checks passed since it was written (else 5, or 4 when
    they failed at their last run), or its patch says `Smoke: none (WHY)`. Writes nothing,
    but runs [install] version_command (or a
    `command` version source, when set) to learn the install's version.

    \b
    Example:
      patchkeeper status --install ~/.hermes/hermes-agent
    """
    workspace = open_workspace(install_path, patches_dir)
    report = worktree_status(workspace.install, workspace.settings, workspace.patch_set)
    report.patch_set = workspace.patch_set_label
    note_next_steps(report, workspace)
    note_leftovers_in(report, workspace)
    if (unfinished := jr.load(workspace.install.state_dir)) is not None:
        report.notes.insert(0, unfinished_note(workspace, unfinished))
    elif (missed := update_not_done(workspace)) is not None:
        report.notes.insert(0, missed)
    if (writer := interrupted(workspace.install.state_dir)) is not None:
        report.notes.insert(0, interrupted_note(writer))
    records = load_applied(workspace.install.state_dir)
    proof_code, unproven = status_notes(
        workspace.install.path, workspace.patch_set, report.results, records, report.head
    )
    report.notes += unproven
    code = tree_exit_code(report.results, pending_needs_attention=True)
    if report.notes:
        code = exitcodes.worst(code, proof_code or exitcodes.ATTENTION)
    if metrics_path is not None:
        write_metrics(metrics_path, "status", code, tree_json(report), workspace.install.state_dir)
    if as_json:
        emit_json("status", code, **tree_json(report))
    else:
        render_tree(report, "status")
    return code
