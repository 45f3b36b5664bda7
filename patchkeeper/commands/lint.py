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
from patchkeeper.patchset.model import Patch, PatchSet
from patchkeeper.patchset.settings import load_settings
from patchkeeper.report.render import emit_json


def unread(patch: Patch, problem_files: set[Path]) -> bool:
    """Whether a variant of PATCH cannot be read or is unsafe, or git cannot read it (a
    problem listed at one of its files, PROBLEM_FILES)."""
    return any(
        variant.invalid is not None or variant.path in problem_files for variant in patch.variants
    )


def header_fields(patch_set: PatchSet) -> dict[str, dict[str, object]]:
    """Per patch file (relative to the set): every header field as written, fields that may
    repeat as lists, the free text, and whether it is empty. Unknown fields are shown too."""
    shown: dict[str, dict[str, object]] = {}
    for patch in patch_set.patches:
        for variant in patch.variants:
            header = variant.header
            shown[str(variant.path.relative_to(patch_set.root))] = {
                "fields": {
                    header.names[key]: list(values) if len(values) > 1 else values[0]
                    for key, values in header.values.items()
                },
                "unknown": sorted(header.unknown),
                "free_text": "\n".join(header.free_text),
                "empty": variant.empty,
            }
    return shown


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
    warnings = patch_set.warnings
    problem_files = {problem.path for problem in problems}
    if as_json:
        emit_json(
            "lint",
            code,
            patch_set=f"{patch_set.root} ({choice.reason})",
            problems=[
                {"file": str(p.path), "line": p.line, "message": p.message} for p in problems
            ],
            patches=[
                {"name": p.name, "outcome": "invalid" if unread(p, problem_files) else "ok"}
                for p in patch_set.patches
            ],
            warnings=[
                {"file": str(w.path), "line": w.line, "message": w.message} for w in warnings
            ],
            headers=header_fields(patch_set),
        )
        return code
    for problem in problems:
        click.echo(str(problem))
    for warning in warnings:
        click.echo(str(Problem(warning.path, warning.line, f"warning: {warning.message}")))
    count = len(patch_set.patches)
    noted = f", {len(warnings)} warning(s)" if warnings else ""
    click.echo(
        f"{patch_set.root} ({choice.reason}): {count} patch(es), {len(problems)} problem(s)"
        f"{noted}",
        err=bool(problems),
    )
    return code

