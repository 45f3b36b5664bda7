"""A report on the install's work tree (`TreeReport`: what `status`, `apply`, `unapply`,
`recover` and `demo` say about each patch there) as text for people and as JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from patchkeeper.report.render import patch_json, patch_lines

if TYPE_CHECKING:  # the commands that render one have loaded them
    from patchkeeper.engine.patching import TreeReport
    from patchkeeper.install.checkout.install import Install
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
