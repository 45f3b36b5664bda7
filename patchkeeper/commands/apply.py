"""`patchkeeper apply`: put every patch that applies into the work tree, in one write."""

from __future__ import annotations

from pathlib import Path

import click

from patchkeeper import exitcodes
from patchkeeper import outcomes as oc
from patchkeeper.commands.common import (
    install_option,
    json_option,
    open_workspace,
    patches_option,
    wait_option,
)
from patchkeeper.commands.status import (
    note_leftovers_in,
    note_next_steps,
    render_tree,
    tree_json,
)
from patchkeeper.patching import apply_patches
from patchkeeper.report import emit_json
from patchkeeper.verdict import tree_exit_code
from patchkeeper.workspace import locked_for_writing


@click.command("apply")
@install_option
@patches_option
@wait_option
@json_option
def command(install_path: Path | None, patches_dir: Path | None, wait: float, as_json: bool) -> int:
    """Apply every patch that applies; report the rest.

    Running it twice changes nothing the second time. A conflicting patch writes nothing, nor
    does any later patch that shares a file with it (exit 3). The user's own edits are kept.
    It runs [install] version_command (when set) to pick each patch's variant.

    \b
    Example:
      patchkeeper apply --install ~/.hermes/hermes-agent
    """
    workspace = open_workspace(install_path, patches_dir)
    with locked_for_writing(workspace, "apply", wait) as lock:
        report = apply_patches(workspace.install, workspace.settings, workspace.patch_set)
    report.patch_set = workspace.patch_set_label
    if lock.taken_over:
        report.notes.append(f"took over a stale lock from dead {lock.taken_over.describe()}")
    if lock.settled:
        report.notes.append(lock.settled.describe())
    note_next_steps(report, workspace)
    note_leftovers_in(report, workspace)  # a parked stash may hold the user's content
    code = tree_exit_code(report.results, pending_needs_attention=False)
    if any(note.startswith("leftover ") for note in report.notes):
        code = exitcodes.worst(code, exitcodes.ATTENTION)
    if as_json:
        emit_json("apply", code, **tree_json(report))
        return code
    render_tree(report, "apply")
    written = [r.name for r in report.results if r.outcome in oc.WRITES]
    click.echo(f"wrote: {', '.join(written)}" if written else "nothing to write")
    return code
