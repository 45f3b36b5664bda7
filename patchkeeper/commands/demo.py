"""`patchkeeper demo`: the whole job on a practice upstream, explained for a newcomer."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import click

from patchkeeper import nextstep
from patchkeeper.checking import check_refs
from patchkeeper.commands.check import render_table
from patchkeeper.commands.common import json_option
from patchkeeper.commands.status import render_tree, tree_json
from patchkeeper.commands.update import render_update, update_json
from patchkeeper.config import load_settings
from patchkeeper.install import open_install
from patchkeeper.patching import TreeReport, apply_patches, worktree_status
from patchkeeper.patchset import load_patch_set
from patchkeeper.report import emit_json, patch_json, use_colour
from patchkeeper.update import UpdateOptions, run_update
from patchkeeper.verdict import tree_exit_code
from patchkeeper.workspace import Workspace, locked_for_writing


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


@click.command("demo")
@click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Where to build the sandbox (default: a new temp dir, kept for you to explore).",
)
@json_option
def command(directory: Path | None, as_json: bool) -> int:
    """Build a practice upstream and walk through status, apply, check and update.

    Needs no network. The sandbox is kept afterwards: run any command on it with
    `--install DIR/hermes-agent --patches DIR/patches`. With --json, one document: the
    update's (as `update --json` writes it), each step's results under `steps`, and where the
    sandbox is under `sandbox`.

    \b
    Example:
      patchkeeper demo --dir /tmp/pk-demo
    """
    from patchkeeper.demo.sandbox import INSTALL_TAG, TAGS, build_sandbox

    tell = Narration(as_json)
    root = directory or Path(tempfile.mkdtemp(prefix="patchkeeper-demo-"))
    sandbox = build_sandbox(root)
    patch_set = load_patch_set(sandbox.patches)
    settings = load_settings(patch_set.root)
    install = open_install(sandbox.install)

    tell.say(f"A practice upstream was built in {root}")
    tell.echo(
        f"  origin.git    a bare 'upstream' with releases {', '.join(TAGS)}\n"
        f"  hermes-agent  the install: a shallow clone at {INSTALL_TAG}, like the real installer\n"
        "  patches       the bundled Hermes patch set: adoption-retry (retry ledger adoption\n"
        "                while SQLite is busy) and schema-once (initialise the schema once per\n"
        "                process), written against the real upstream's lines"
    )

    tell.say(
        "1. status before anything: the fixes are not in the install yet (exit 5 if run alone)"
    )
    status = worktree_status(install, settings, patch_set)
    tell.tree("status", status, pending_needs_attention=True)

    tell.say("2. apply: every patch is tried in a scratch index, then written in one step")
    tell.tree("apply", apply_patches(install, settings, patch_set), pending_needs_attention=False)

    tell.say("3. status again: both fixes are in place and recorded under .git/patchkeeper/")
    status = worktree_status(install, settings, patch_set)
    tell.tree("status", status, pending_needs_attention=True)

    sandbox.fetch_tags()
    tell.say("4. check against every upstream release, without touching the install")
    reports = check_refs(install.path, patch_set, TAGS, settings.version_file)
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
        "5. upstream releases v0.21.5 (code moves around the hook points); the timer runs\n"
        "   `patchkeeper update`, not `hermes update`"
    )
    tell.echo(
        "  The operator also has an edit of their own (hermes_constants.py). patchkeeper takes\n"
        "  its patches out, keeps the edit in a ref, runs ./hermes update, puts every patch\n"
        "  back, merges the edit back and runs the ledger smoke check, which holds the ledger's\n"
        "  write lock for 7 s on purpose: the fixed worker must still adopt its job."
    )
    constants = sandbox.install / "hermes_constants.py"
    constants.write_text(constants.read_text() + "# operator: local note\n")
    sandbox.publish("v0.21.5")
    os.environ["HERMES_HOME"] = str(sandbox.home)  # the practice run never writes real state
    workspace = Workspace(settings, install, patch_set)
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
        f"Explore: {nextstep.command('status', install=sandbox.install, patches=sandbox.patches)}"
    )
    return code
