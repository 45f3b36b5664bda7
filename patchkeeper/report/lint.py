"""What `lint` says about a patch set: one `FILE:LINE: problem` line per problem and a count,
or the `--json` document (problems, warnings, each patch ok or invalid, every header field)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from patchkeeper.model.problems import Problem
from patchkeeper.patchset.model import Patch, PatchSet


def _unread(patch: Patch, problem_files: set[Path]) -> bool:
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


def lint_json(patch_set: PatchSet, reason: str, problems: list[Problem]) -> dict[str, Any]:
    """The document: REASON says why this set was chosen, PROBLEMS are every problem found."""
    problem_files = {problem.path for problem in problems}
    return {
        "patch_set": f"{patch_set.root} ({reason})",
        "problems": [
            {"file": str(p.path), "line": p.line, "message": p.message} for p in problems
        ],
        "patches": [
            {"name": p.name, "outcome": "invalid" if _unread(p, problem_files) else "ok"}
            for p in patch_set.patches
        ],
        "warnings": [
            {"file": str(w.path), "line": w.line, "message": w.message}
            for w in patch_set.warnings
        ],
        "headers": header_fields(patch_set),
    }


def render_lint(patch_set: PatchSet, reason: str, problems: list[Problem]) -> None:
    """Each problem, each warning, then the count (on stderr when there is a problem)."""
    warnings = patch_set.warnings
    for problem in problems:
        click.echo(str(problem))
    for warning in warnings:
        click.echo(str(Problem(warning.path, warning.line, f"warning: {warning.message}")))
    count = len(patch_set.patches)
    noted = f", {len(warnings)} warning(s)" if warnings else ""
    click.echo(
        f"{patch_set.root} ({reason}): {count} patch(es), {len(problems)} problem(s)"
        f"{noted}",
        err=bool(problems),
    )
