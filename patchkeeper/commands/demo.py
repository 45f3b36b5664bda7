"""`patchkeeper demo`: the whole job on a practice upstream, explained for a newcomer."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click

from patchkeeper.checking import check_refs
from patchkeeper.commands.check import render_table
from patchkeeper.commands.status import render_tree
from patchkeeper.commands.update import render_update
from patchkeeper.config import load_settings
from patchkeeper.install import open_install
from patchkeeper.patching import apply_patches, worktree_status
from patchkeeper.patchset import load_patch_set
from patchkeeper.report import use_colour
from patchkeeper.update import UpdateOptions, run_update
from patchkeeper.workspace import Workspace, locked_for_writing


def say(text: str) -> None:
    heading = f"== {text}"
    click.echo("\n" + (click.style(heading, bold=True) if use_colour() else heading))


@click.command("demo")
@click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Where to build the sandbox (default: a new temp dir, kept for you to explore).",
)
def command(directory: Path | None) -> int:
    """Build a practice upstream and walk through status, apply, check and update.

    Needs no network. The sandbox is kept afterwards: run any command on it with
    `--install DIR/hermes-agent --patches DIR/patches`.

    \b
    Example:
      patchkeeper demo --dir /tmp/pk-demo
    """
    from patchkeeper.demo.sandbox import TAGS, build_sandbox

    root = directory or Path(tempfile.mkdtemp(prefix="patchkeeper-demo-"))
    sandbox = build_sandbox(root)
    patch_set = load_patch_set(sandbox.patches)
    settings = load_settings(patch_set.root)
    install = open_install(sandbox.install)

    say(f"A practice upstream was built in {root}")
    click.echo(
        f"  origin.git    a bare 'upstream' with releases {', '.join(TAGS)}\n"
        f"  hermes-agent  the install: a shallow clone at {TAGS[0]}, like the real installer\n"
        "  patches       the bundled Hermes patch set: adoption-retry (retry ledger adoption\n"
        "                while SQLite is busy) and schema-once (initialise the schema once per\n"
        "                process), written against the real upstream's lines"
    )

    say("1. status before anything: the fixes are not in the install yet (exit 5 if run alone)")
    render_tree(worktree_status(install, settings, patch_set), "status")

    say("2. apply: every patch is tried in a scratch index, then written in one step")
    render_tree(apply_patches(install, settings, patch_set), "apply")

    say("3. status again: both fixes are in place and recorded under .git/patchkeeper/")
    render_tree(worktree_status(install, settings, patch_set), "status")

    sandbox.fetch_tags()
    say("4. check against every upstream release, without touching the install")
    render_table(check_refs(install.path, patch_set, TAGS, settings.version_file))

    say("5. upstream releases v0.22.0 (the worker moves to a module of its own); the timer runs\n"
        "   `patchkeeper update`, not `hermes update`")
    click.echo(
        "  The operator also has an edit of their own (hermes_constants.py). patchkeeper takes\n"
        "  its patches out, keeps the edit in a ref, runs ./hermes update, puts every patch\n"
        "  back, merges the edit back and runs the ledger smoke check, which holds the ledger's\n"
        "  write lock for 7 s on purpose: the fixed worker must still adopt its job."
    )
    constants = sandbox.install / "hermes_constants.py"
    constants.write_text(constants.read_text() + "# operator: local note\n")
    sandbox.publish("v0.22.0")
    os.environ["HERMES_HOME"] = str(sandbox.home)  # the practice run never writes real state
    workspace = Workspace(settings, install, patch_set)
    with locked_for_writing(workspace, "update", wait=0) as lock:
        report = run_update(workspace, lock, UpdateOptions())
    render_update(report)
    click.echo(f"exit code: {report.exit_code()}")

    say("What the outcomes mean")
    click.echo(
        "  applied-offset   upstream moved code around; the fix still lands (offsets shown)\n"
        "  conflict         upstream changed lines the fix relies on: refresh the patch\n"
        "                   (the file, hunk and expected lines are shown above)\n"
        "  upstream-has-it  upstream now contains the fix: retire the patch\n"
        "\n"
        f"Explore: patchkeeper status --install {sandbox.install} --patches {sandbox.patches}"
    )
    return report.exit_code()  # the demo's main job tells the truth too
