"""`patchkeeper demo`: the whole job on a practice upstream, explained for a newcomer."""

from __future__ import annotations

import os
import shlex
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from patchkeeper.commands.common import json_option
from patchkeeper.engine.checking import check_refs
from patchkeeper.engine.patching import TreeReport, apply_patches, worktree_status
from patchkeeper.install.checkout.install import open_install
from patchkeeper.install.workspace import Workspace, locked_for_writing
from patchkeeper.model import exitcodes, nextstep
from patchkeeper.model import outcomes as oc
from patchkeeper.model.errors import UserError
from patchkeeper.model.verdict import tree_exit_code
from patchkeeper.patchset.load import load_patch_set
from patchkeeper.patchset.settings import load_settings
from patchkeeper.report.check_table import render_table
from patchkeeper.report.render import emit_json, patch_json, use_colour
from patchkeeper.report.tree import render_tree, tree_json
from patchkeeper.report.update import render_update, update_json
from patchkeeper.update.context import UpdateOptions
from patchkeeper.update.run import run_update

if TYPE_CHECKING:
    from patchkeeper.demo.sandbox import Sandbox


class Narration:
    """What the demo says: headings and tables in text mode; with --json, each step's
    results are kept instead, for the one document printed at the end."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.steps: list[dict[str, Any]] = []

    def say(self, text: str) -> None:
        if not self.as_json:
            heading = f"== {text}"
            click.echo("\n" + (click.style(heading, bold=True) if use_colour() else heading))

    def echo(self, text: str) -> None:
        if not self.as_json:
            click.echo(text)

    def tree(self, step: str, report: TreeReport, *, pending_needs_attention: bool) -> None:
        if self.as_json:
            code = tree_exit_code(report.results, pending_needs_attention=pending_needs_attention)
            self.steps.append({"step": step, "exit_code": code, **tree_json(report)})
        else:
            render_tree(report, step)


START = "0.21.2"  # before upstream's heartbeat fix and before #110192's ack wait
NEXT = "0.21.3"  # upstream's heartbeat fix is in; adoption-retry has its variant


def show_apply(tell: Narration, workspace: Workspace) -> None:
    """`apply` as the command runs it: write what applies, then the checks of what was
    written and of fixes with no variant for a release this old; its exit says the truth."""
    from patchkeeper.commands.apply import prove
    from patchkeeper.proof.smoke.for_patches import unfixed_notes, unfixed_results
    from patchkeeper.proof.smoke.results import ERROR, FAIL

    install, settings, patch_set = workspace.install, workspace.settings, workspace.patch_set
    with locked_for_writing(workspace, "apply", wait=0):
        report = apply_patches(install, settings, patch_set)
        written = [r for r in report.results if r.outcome in oc.WRITES]
        unfixed = unfixed_results(patch_set, report.results, report.version.version)
        proof = prove(workspace, report, written, unfixed, skip=False, quiet=True)
    report.notes += unfixed_notes(patch_set, unfixed, proof.checks)
    code = tree_exit_code(report.results, pending_needs_attention=False)
    if proof.status in (FAIL, ERROR):
        code = exitcodes.worst(code, exitcodes.SMOKE_FAILED)
    if tell.as_json:
        # a step document is `apply --json`'s without its smoke: the notes say what failed
        tell.steps.append({"step": "apply", "exit_code": code, **tree_json(report)})
        return
    render_tree(report, "apply")
    tell.echo(f"smoke: {proof.status}")
    tell.echo(f"exit code: {code}")
    tell.echo(
        f"  Exit {code} is the truth on {START}: no adoption-retry variant fits a launcher\n"
        "  that waits 5 s for the ack, and its check shows that path broken. schema-once and\n"
        "  heartbeat-fence are proven by their own checks. The way out is the update below."
    )


def publish(root: Path, tag: str | None) -> int:
    """Release TAG (default: the next one) in the sandbox at ROOT: what a pipx install, with
    no `python -m patchkeeper.demo` at hand, runs after the demo."""
    from patchkeeper.demo.sandbox import open_copied_sandbox

    sandbox = open_copied_sandbox(root)
    tag = sandbox.publish(tag or sandbox.next_release())  # a version names its tag
    click.echo(f"published {tag}: origin's main is at it; run `patchkeeper update` to get it")
    return exitcodes.OK


def explore_line(sandbox: Sandbox) -> str:
    """The command to go on with, HERMES_HOME set: without it the practice updater (run by
    `update`) would fall back to `home/` inside the checkout and write there."""
    status = nextstep.command("status", install=sandbox.install, patches=sandbox.patches)
    return f"HERMES_HOME={shlex.quote(str(sandbox.home))} {status}"


@click.command("demo")
@click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Where to build the sandbox (default: a new temp dir, kept for you to explore).",
)
@click.option(
    "--publish",
    "publish_in",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Only publish the next practice release (or --tag TAG) in this sandbox, then stop.",
)
@click.option("--tag", default=None, help="With --publish: the release to publish.")
@json_option
def command(
    directory: Path | None, publish_in: Path | None, tag: str | None, as_json: bool
) -> int:
    """Build a practice upstream and walk through status, apply, check and update.

    Needs no network. The sandbox is kept afterwards: run any command on it with
    `--install DIR/hermes-agent --patches DIR/patches`. With --json, one document: the
    update's (as `update --json` writes it), each step's results under `steps`, and where the
    sandbox is under `sandbox`.

    \b
    Example:
      patchkeeper demo --dir /tmp/pk-demo
    """
    from patchkeeper.demo.history import RELEASE_TABLE, TAG_OF, TAGS
    from patchkeeper.demo.ledger import plant_ledger
    from patchkeeper.demo.sandbox import build_sandbox

    if publish_in is not None:
        return publish(publish_in, tag)
    if tag is not None:
        raise UserError("demo: --tag goes with --publish DIR (the sandbox to publish it in)")
    tell = Narration(as_json)
    if directory is not None:
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except (FileNotFoundError, NotADirectoryError, FileExistsError) as exc:
            raise UserError(f"{directory}: cannot build a sandbox there ({exc.strerror})") from None
    root = directory or Path(tempfile.mkdtemp(prefix="patchkeeper-demo-"))
    sandbox = build_sandbox(root, install_tag=START)
    os.environ["HERMES_HOME"] = str(sandbox.home)  # the practice run never writes real state
    plant_ledger(sandbox.home)  # something for `audit` to find
    patch_set = load_patch_set(sandbox.patches)
    settings = load_settings(patch_set.root)
    install = open_install(sandbox.install)

    tell.say(f"A practice upstream was built in {root}")
    tell.echo(
        "  origin.git    a bare 'upstream' with releases tagged by date, as upstream tags them:\n"
        f"                {', '.join(f'{r.tag} ({r.version})' for r in RELEASE_TABLE)}\n"
        f"  hermes-agent  the install: a shallow clone at {TAG_OF[START]}, like the real\n"
        "                installer, which writes the version into install-stamp.json (from\n"
        "                0.21.5 on the only place it is written)\n"
        "  patches       the bundled Hermes patch set: adoption-retry (retry ledger adoption\n"
        "                while SQLite is busy, for 0.21.3 on), schema-once (initialise the schema\n"
        "                once per process) and heartbeat-fence (the fire-claim heartbeat must not\n"
        "                wait on the fence its own run holds; upstream fixed it in 0.21.3),\n"
        "                written against the real upstream's lines"
    )

    tell.say(
        "1. status before anything: the fixes are not in the install yet (exit 5 if run alone)"
    )
    status = worktree_status(install, settings, patch_set)
    tell.tree("status", status, pending_needs_attention=True)

    tell.say(f"2. apply on {START}: the fixes that apply there are written, then every check runs")
    workspace = Workspace(settings, install, patch_set)
    show_apply(tell, workspace)

    tell.say("3. status again: the fixes are in place and recorded under .git/patchkeeper/")
    status = worktree_status(install, settings, patch_set)
    tell.tree("status", status, pending_needs_attention=True)

    sandbox.fetch_tags()
    tell.say("4. check against every upstream release, without touching the install")
    reports = check_refs(install.path, patch_set, TAGS, settings)
    if as_json:
        results = [result for report in reports for result in report.results]
        tell.steps.append(
            {
                "step": "check",
                "exit_code": tree_exit_code(results, pending_needs_attention=False),
                "patches": [
                    {**patch_json(result), "ref": report.ref}
                    for report in reports
                    for result in report.results
                ],
            }
        )
    else:
        render_table(reports)

    tell.say(
        f"5. upstream releases {NEXT} ({TAG_OF[NEXT]}) with its own heartbeat fix (PR #109310);\n"
        "   the timer runs `patchkeeper update`, not `hermes update`"
    )
    tell.echo(
        "  The operator also has an edit of their own (hermes_constants.py). patchkeeper takes\n"
        "  its patches out, keeps the edit in a ref, runs ./hermes update, puts every patch\n"
        "  back: heartbeat-fence is retired by content (upstream-has-it), adoption-retry now\n"
        "  applies. It merges the edit back and runs the smoke checks; the ledger check holds\n"
        "  the ledger's write lock for 7 s on purpose: the fixed worker must still adopt its job."
    )
    constants = sandbox.install / "hermes_constants.py"
    constants.write_text(constants.read_text() + "# operator: local note\n")
    sandbox.publish(NEXT)
    with locked_for_writing(workspace, "update", wait=0) as lock:
        report = run_update(workspace, lock, UpdateOptions(as_json=as_json))
    code = report.exit_code()  # the demo's main job tells the truth too
    if as_json:
        document = update_json(report)
        tell.steps.append({"step": "update", "exit_code": code, "patches": document["patches"]})
        where = {
            "root": str(root),
            "install": str(sandbox.install),
            "patches": str(sandbox.patches),
        }
        emit_json("demo", code, sandbox=where, steps=tell.steps, **document)
        return code
    render_update(report)
    click.echo(f"exit code: {code}")

    tell.say("What the outcomes mean")
    click.echo(
        "  applied-offset   upstream moved code around; the fix still lands (offsets shown)\n"
        "  conflict         upstream changed lines the fix relies on: refresh the patch\n"
        "                   (the file, hunk and expected lines are shown above)\n"
        "  upstream-has-it  upstream now contains the fix: retire the patch\n"
        "\n"
        f"Explore: {explore_line(sandbox)}\n"
        f"Audit:   patchkeeper audit --home {shlex.quote(str(sandbox.home))}"
        "   (a planted ledger: a job lost to 'database is locked')\n"
        f"Release: patchkeeper demo --publish {shlex.quote(str(sandbox.root))}"
        "   (the next practice release, for the next `update`;\n"
        "         name one with `--tag 0.22.0` (or its tag), or `--tag 0.21.5+1`: a main-channel\n"
        "         commit whose worker is restructured like upstream's newest)"
    )
    return code
