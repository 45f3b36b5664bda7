"""`patchkeeper init DIR`: start a patch set of one's own as a copy of the bundled one."""

from __future__ import annotations

from pathlib import Path

import click

from patchkeeper.commands.common import json_option
from patchkeeper.model.errors import UserError
from patchkeeper.patchset.bundled import bundled_patches, copy_bundled
from patchkeeper.report.render import emit_json


@click.command("init")
@click.argument("target", metavar="DIR", type=click.Path(path_type=Path))
@json_option
def command(target: Path, as_json: bool) -> int:
    """Copy the bundled patch set (series, patches, smoke checks, patchkeeper.toml) to DIR.

    DIR is made if missing and must be empty. Use it with --patches DIR (or
    PATCHKEEPER_PATCHES=DIR): `record` and `refresh` write there, never into the installed
    package, which an upgrade replaces.

    \b
    Example:
      patchkeeper init ~/patchkeeper-patches
    """
    target = target.expanduser()
    if target.exists() and not target.is_dir():
        raise UserError(f"{target}: not a folder")
    if target.is_dir() and any(target.iterdir()):
        raise UserError(f"{target}: not empty; give a new or empty folder")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except (FileNotFoundError, NotADirectoryError) as exc:  # a permission refusal: exit 7
        raise UserError(f"{target}: cannot make this folder ({exc.strerror})") from None
    written = copy_bundled(target)
    root = str(target.resolve())
    if as_json:
        emit_json("init", 0, patch_set=root, source=str(bundled_patches()), files=written)
    else:
        click.echo(f"copied the bundled patch set to {root} ({len(written)} files)")
        click.echo(f"next: patchkeeper apply --patches {root} (the install remembers it)")
    return 0
