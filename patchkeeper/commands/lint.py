"""`patchkeeper lint`: check the whole patch set, no install needed."""

from __future__ import annotations

from pathlib import Path

import click

from patchkeeper.commands.common import install_option, json_option, patches_option
from patchkeeper.engine.readable import unreadable_by_git
from patchkeeper.install.set_choice import choose_near
from patchkeeper.model import exitcodes
from patchkeeper.model.errors import UserError
from patchkeeper.model.problems import Problem
from patchkeeper.patchset.bundled import bundled_patches
from patchkeeper.patchset.load import dangling_smoke, inspect_patch_set
from patchkeeper.patchset.settings import load_settings
from patchkeeper.report.lint import lint_json, render_lint
from patchkeeper.report.render import emit_json


@click.command("lint")
@install_option
@patches_option
@json_option
def command(install_path: Path | None, patches_dir: Path | None, as_json: bool) -> int:
    """Check series, headers, specifiers, variants, diffs and paths of a patch set.

    Every `Smoke:` name must have its smoke/NAME.py. Prints one `FILE:LINE: problem` line per
    problem; exit 2 if there is any. The set is chosen as every command chooses it:
    --patches, PATCHKEEPER_PATCHES, the set the install (--install, else the default one,
    when it is there) was applied from, the bundled one.

    \b
    Example:
      patchkeeper lint --patches ./patches
    """
    choice = choose_near(patches_dir, install_path)  # a remembered set that is gone: exit 2
    root = (choice.path or bundled_patches()).expanduser()
    patch_set, problems = inspect_patch_set(root)
    problems += unreadable_by_git(patch_set)
    problems += dangling_smoke(patch_set)
    try:
        load_settings(patch_set.root)
    except UserError as exc:
        problems.append(
            Problem(patch_set.root / "patchkeeper.toml", 1, str(exc).split(": ", 1)[-1])
        )
    code = exitcodes.USAGE if problems else exitcodes.OK
    if as_json:
        emit_json("lint", code, **lint_json(patch_set, choice.reason, problems))
    else:
        render_lint(patch_set, choice.reason, problems)
    return code
