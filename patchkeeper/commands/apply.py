"""`patchkeeper apply`: put every patch that applies into the work tree, in one write."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import click

from patchkeeper.commands.common import (
    install_option,
    json_option,
    metrics_option,
    open_workspace,
    patches_option,
    wait_option,
    write_metrics,
)
from patchkeeper.commands.status import note_leftovers_in, note_next_steps
from patchkeeper.engine.patching import TreeReport, apply_patches
from patchkeeper.install.records.applied import load_applied
from patchkeeper.install.workspace import Workspace, locked_for_writing
from patchkeeper.model import exitcodes, nextstep
from patchkeeper.model import outcomes as oc
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.model.verdict import tree_exit_code
from patchkeeper.proof.smoke.for_patches import (
    patches_proven_by,
    unfixed_notes,
    unfixed_results,
)
from patchkeeper.proof.smoke.proven import keep_verdicts, to_prove, unchecked_notes
from patchkeeper.proof.smoke.results import ERROR, FAIL, PASS
from patchkeeper.report.render import emit_json, paint, smoke_line
from patchkeeper.report.tree import render_tree, tree_json
from patchkeeper.update.checks import run_smoke_checks
from patchkeeper.update.report import SmokeReport

SKIPPED = "skipped"  # --no-smoke: the patches written are not proven


@click.command("apply")
@install_option
@patches_option
@wait_option
@click.option(
    "--no-smoke",
    is_flag=True,
    help="Do not run the smoke checks of the patches written (the report says so; exit 5).",
)
@json_option
@metrics_option
def command(
    install_path: Path | None,
    patches_dir: Path | None,
    wait: float,
    no_smoke: bool,
    as_json: bool,
    metrics_path: Path | None,
) -> int:
    """Apply every patch that applies; report the rest.

    Running it twice changes nothing the second time. A conflicting patch writes nothing, nor
    does any later patch that shares a file with it (exit 3). The user's own edits are kept.
    Then it runs the smoke checks the patches it wrote name (as `update` does; --no-smoke
    skips them, and a run that wrote something is then exit 5): a check that fails or could
    not check is exit 4, and the fix stays in place (a check that could not run says nothing
    against it); the report names the command that takes it out, `patchkeeper unapply NAME`.
    It runs [install] version_command (or a
    `command` version source, when set) to pick each patch's variant.

    \b
    Example:
      patchkeeper apply --install ~/.hermes/hermes-agent
    """
    workspace = open_workspace(install_path, patches_dir)
    with locked_for_writing(workspace, "apply", wait) as lock:
        report = apply_patches(workspace.install, workspace.settings, workspace.patch_set)
        written = [r for r in report.results if r.outcome in oc.WRITES]
        # Written earlier and not proven since (--no-smoke, a run killed in its checks).
        records = load_applied(workspace.install.state_dir)
        unproven = to_prove(workspace.patch_set, report.results, records)
        # A fix with no variant for a release this old: its check still runs (never green).
        unfixed = unfixed_results(workspace.patch_set, report.results, report.version.version)
        proof = prove(
            workspace, report, [*written, *unproven], unfixed, skip=no_smoke, quiet=as_json
        )
        if proof.checks:
            proven = [*written, *unproven]  # the fixes whose checks just ran
            keep_verdicts(workspace.install.state_dir, workspace.patch_set, proven, proof.checks)
    report.patch_set = workspace.patch_set_label
    if lock.taken_over:
        report.notes.append(f"took over a stale lock from dead {lock.taken_over.describe()}")
    if lock.settled:
        report.notes.append(lock.settled.describe())
    note_next_steps(report, workspace)
    note_leftovers_in(report, workspace)  # a parked stash may hold the user's content
    report.notes += take_out_steps(workspace, [*written, *unproven], proof)
    report.notes += unfixed_notes(workspace.patch_set, unfixed, proof.checks)
    unchecked = unchecked_notes(workspace.patch_set, report.results)
    report.notes += unchecked
    code = tree_exit_code(report.results, pending_needs_attention=False)
    if any(note.startswith("leftover ") for note in report.notes):
        code = exitcodes.worst(code, exitcodes.ATTENTION)
    if proof.status in (FAIL, ERROR):
        code = exitcodes.worst(code, exitcodes.SMOKE_FAILED)
    if proof.status == SKIPPED:  # in place, yet nothing proves it: never green
        report.notes.append("written, not proven: --no-smoke")
        code = exitcodes.worst(code, exitcodes.ATTENTION)
    if unchecked:  # in place, and no check can say it works
        code = exitcodes.worst(code, exitcodes.ATTENTION)
    if metrics_path is not None:
        document = {**tree_json(report), "smoke": asdict(proof)}
        write_metrics(metrics_path, "apply", code, document, workspace.install.state_dir)
    if as_json:
        emit_json("apply", code, **tree_json(report), smoke=asdict(proof))
        return code
    render_tree(report, "apply")
    names = [r.name for r in written]
    click.echo(f"wrote: {', '.join(names)}" if names else "nothing to write")
    click.echo(smoke_line(proof.status, proof.detail, report.results))
    return code


def prove(
    workspace: Workspace,
    report: TreeReport,
    written: list[PatchResult],
    unfixed: list[PatchResult],
    *,
    skip: bool,
    quiet: bool,
) -> SmokeReport:
    """The smoke checks the patches written now (or written earlier and not proven since)
    name, and those of UNFIXED patches (no variant yet for a release this old): these run
    even when nothing was written, so a second `apply` is never green while the unfixed path
    is broken, nor while a fix was never proven."""
    if not written and not unfixed:
        return SmokeReport("not-configured", "nothing written: nothing to prove")
    if skip:
        return SmokeReport(SKIPPED, "--no-smoke: the patches in place are not proven")

    def progress(name: str, text: str) -> None:
        if not quiet:
            click.echo(paint(f"  .. smoke {name}: {text}", "bright_black"), err=True)

    return run_smoke_checks(workspace, [*written, *unfixed], progress, report.version)


def take_out_steps(
    workspace: Workspace, written: list[PatchResult], proof: SmokeReport
) -> list[str]:
    """For each patch written whose check did not pass: it stays in, and how to take it out."""
    failing = {c["name"]: c["verdict"] for c in proof.checks if c["verdict"] != PASS}
    steps = []
    for name in patches_proven_by(workspace.patch_set, written, failing):
        patch = workspace.patch_set.by_name(name)
        checks = sorted(
            {n for v in (patch.variants if patch else ()) for n in v.smoke} & set(failing)
        )
        said = ", ".join(
            f"{c} {'could not check' if failing[c] == ERROR else 'failed'}" for c in checks
        )
        unapply = nextstep.command(
            "unapply", name, install=workspace.install.path, patches=workspace.patch_set.root
        )
        steps.append(f"{name} is in place but not proven ({said}); take it out with {unapply}")
    return steps
