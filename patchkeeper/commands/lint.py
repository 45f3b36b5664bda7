"""`patchkeeper lint`: check the whole patch set, no install needed."""

from __future__ import annotations

from pathlib import Path

import click

from patchkeeper import exitcodes
from patchkeeper.bundled import bundled_patches
from patchkeeper.commands.common import bundled_patches_option, json_option
from patchkeeper.config import load_settings
from patchkeeper.errors import UserError
from patchkeeper.patchset import inspect_patch_set
from patchkeeper.problems import Problem
from patchkeeper.readable import unreadable_by_git
from patchkeeper.report import emit_json


@click.command("lint")
@bundled_patches_option
@json_option
def command(patches_dir: Path | None, as_json: bool) -> int:
    """Check series, headers, specifiers, variants, diffs and paths of a patch set.

    Prints one `FILE:LINE: problem` line per problem; exit 2 if there is any.

    \b
    Example:
      patchkeeper lint --patches ./patches
    """
    root = (patches_dir or bundled_patches()).expanduser()
    patch_set, problems = inspect_patch_set(root)
    problems += unreadable_by_git(patch_set)
    try:
        load_settings(patch_set.root)
    except UserError as exc:
        problems.append(
            Problem(patch_set.root / "patchkeeper.toml", 1, str(exc).split(": ", 1)[-1])
        )
    code = exitcodes.USAGE if problems else exitcodes.OK
    if as_json:
        emit_json(
            "lint",
            code,
            patch_set=str(patch_set.root),
            problems=[
                {"file": str(p.path), "line": p.line, "message": p.message} for p in problems
            ],
            patches=[{"name": p.name, "outcome": "ok"} for p in patch_set.patches],
        )
        return code
    for problem in problems:
        click.echo(str(problem))
    count = len(patch_set.patches)
    click.echo(
        f"{patch_set.root}: {count} patch(es), {len(problems)} problem(s)", err=bool(problems)
    )
    return code
