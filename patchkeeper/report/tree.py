"""A report on the install's work tree (`TreeReport`: what `status`, `apply`, `unapply`,
`recover` and `demo` say about each patch there) as text for people and as JSON; and the
patch file `record` and `refresh` wrote, said with the same keys."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from patchkeeper.report.render import patch_json, patch_lines

if TYPE_CHECKING:  # the commands that render one have loaded them
    from pathlib import Path

    from patchkeeper.engine.patching import TreeReport
    from patchkeeper.install.checkout.install import Install
    from patchkeeper.install.workspace import Workspace
    from patchkeeper.patchset.versions import VersionInfo


def render_tree(report: TreeReport, title: str) -> None:
    click.echo(f"{title}")
    click.echo(f"  install  {report.install.path}")
    click.echo(f"  version  {report.version.said()}")
    click.echo(f"  HEAD     {report.head or '(none)'}")
    if report.patch_set:
        click.echo(f"  set      {report.patch_set}")
    click.echo("patches:")
    for result in report.results:
        for line in patch_lines(result):
            click.echo(line)
    if not report.results:
        click.echo("  (none)")
    for note in report.notes:
        click.echo(f"note: {note}")


def install_json(install: Install, version: VersionInfo, head: str | None) -> dict:
    return {"path": str(install.path), **version.as_json(), "head": head}


def tree_json(report: TreeReport) -> dict:
    return {
        "install": install_json(report.install, report.version, report.head),
        "patch_set": report.patch_set,
        "patches": [patch_json(r) for r in report.results],
        "notes": report.notes,
    }


def written_json(
    workspace: Workspace, version: VersionInfo, name: str, path: Path, word: str, notes: list[str]
) -> dict:
    """The document of `record` and `refresh`: the patch file written, as a one-patch report
    with the keys of `status` (outcome RECORDED or REFRESHED: it is in place, recorded)."""
    install = workspace.install
    variant = str(path.relative_to(workspace.patch_set.root))
    return {
        "install": install_json(install, version, install.head()),
        "patch_set": workspace.patch_set_label,
        "patches": [{"name": name, "outcome": word, "variant": variant, "file": str(path)}],
        "notes": notes,
    }


def render_written(said: str, notes: list[str]) -> None:
    """What `record` and `refresh` say: SAID (the file written), then each note."""
    click.echo(said)
    for note in notes:
        click.echo(f"note: {note}")
