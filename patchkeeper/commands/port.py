"""`patchkeeper port --onto REF`: carry the patch set onto a new upstream release."""

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
from patchkeeper.install.workspace import Workspace, locked_for_writing, refuse_bundled_set
from patchkeeper.model.errors import UserError


@click.command("port")
@click.option("--onto", "onto", metavar="REF", help="The release to port onto (a tag or commit).")
@click.option(
    "--out",
    "out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Write the ported set to this new folder; the set itself stays as it is.",
)
@click.option("--continue", "go_on", is_flag=True, help="Go on after fixing a conflict by hand.")
@click.option("--abort", "abort", is_flag=True, help="Stop the port; the set stays as it was.")
@install_option
@patches_option
@wait_option
@json_option
def command(
    onto: str | None,
    out: Path | None,
    go_on: bool,
    abort: bool,
    install_path: Path | None,
    patches_dir: Path | None,
    wait: float,
    as_json: bool,
) -> int:
    """Carry the patch set onto a new upstream release REF, variant by variant.

    Each patch is judged on REF on top of the ones before it: one that applies as it is
    stays (its range widened when it did not hold REF's release); one that applies at an
    offset or merges cleanly gets a refreshed variant for REF, the ranges split there; one
    upstream has is proposed for retirement; at a conflict the port stops with the files
    in .git/patchkeeper/port/worktree, diff3 markers in them: fix them, then --continue.
    The ported fixes' smoke checks run on the ported tree. The set changes once, at the end
    (or goes to --out); --abort leaves it as it was.

    \b
    Example:
      patchkeeper port --onto v2026.10.1
    """
    from patchkeeper.port import run
    from patchkeeper.report import port as render

    if sum([onto is not None, go_on, abort]) != 1:
        raise UserError("port: give exactly one of --onto REF, --continue, --abort")
    if out is not None and onto is None:
        raise UserError("port: --out goes with --onto (a port in progress keeps its own)")
    workspace = open_workspace(install_path, patches_dir)
    if onto is not None and out is None:
        refuse_bundled_set(workspace, "port")  # --out DIR: the set is only read
    install = workspace.install
    with locked_for_writing(workspace, "port", wait):
        if onto is not None:
            where = run.Where(install, workspace.settings, workspace.patch_set)
            report = run.start(where, onto, out)
        elif go_on:
            report = run.resume(install, lambda root: _where(workspace, root))
        else:
            report = run.abort(install)
    if as_json:
        render.emit(report)
    else:
        render.render_text(report)
    return report.exit_code


def _where(workspace: Workspace, root: Path):  # type: ignore[no-untyped-def]
    from patchkeeper.port import run

    if workspace.patch_set.root.resolve() == root:
        return run.Where(workspace.install, workspace.settings, workspace.patch_set)
    return run.open_where(workspace.install, root)
