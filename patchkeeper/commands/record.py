"""`patchkeeper record NAME --path P`: capture the current changes to paths as a new patch."""

from __future__ import annotations

from pathlib import Path

import click

from patchkeeper.authoring import record_patch
from patchkeeper.commands.common import install_option, open_workspace, patches_option, wait_option
from patchkeeper.install import install_version
from patchkeeper.workspace import locked_for_writing


@click.command("record")
@click.argument("name")
@click.option("--path", "paths", multiple=True, required=True, help="A path to capture.")
@click.option("-m", "--message", required=True, help="The Description header.")
@install_option
@patches_option
@wait_option
def command(
    name: str,
    paths: tuple[str, ...],
    message: str,
    install_path: Path | None,
    patches_dir: Path | None,
    wait: float,
) -> int:
    """Capture the current changes to PATHs as patch NAME and add it to series.

    The header is filled in: Description from -m, Base = HEAD, Last-Update = today, and
    Applies-To = the current version's minor series. Changes of other patches in the same
    files stay out of it. It runs [install] version_command (when set) for that version.

    \b
    Example:
      patchkeeper record ledger-wal-tuning --path hermes_cli/sqlite_util.py \\
          -m "Checkpoint the ledger WAL less often"
    """
    workspace = open_workspace(install_path, patches_dir)
    with locked_for_writing(workspace, "record", wait):
        version = install_version(workspace.install, workspace.settings)
        written = record_patch(
            workspace.install, workspace.patch_set, version, name, paths, message
        )
    click.echo(f"recorded {written} and added it to series")
    return 0
