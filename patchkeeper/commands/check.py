"""`patchkeeper check --ref REF ...`: how every patch would fare on each ref."""

from __future__ import annotations

from pathlib import Path

import click

from patchkeeper.checking import RefReport, check_refs
from patchkeeper.commands.common import install_option, json_option, open_workspace, patches_option
from patchkeeper.errors import UserError
from patchkeeper.report import emit_json, outcome_word, patch_json, patch_lines
from patchkeeper.verdict import tree_exit_code


def render_table(reports: list[RefReport]) -> None:
    names = [r.name for r in reports[0].results] if reports else []
    width = max([len(n) for n in names] + [5])
    columns = [max(len(report.ref), 16) for report in reports]
    header = f"{'patch':<{width}}  " + "  ".join(
        f"{r.ref:<{w}}" for r, w in zip(reports, columns, strict=True)
    )
    click.echo(header)
    click.echo(
        f"{'':<{width}}  "
        + "  ".join(f"{r.version!s:<{w}}" for r, w in zip(reports, columns, strict=True))
    )
    for row, name in enumerate(names):
        cells = [
            outcome_word(r.results[row].outcome) + " " * (w - len(r.results[row].outcome))
            for r, w in zip(reports, columns, strict=True)
        ]
        click.echo(f"{name:<{width}}  " + "  ".join(cells).rstrip())
    for report in reports:
        details = [r for r in report.results if r.offsets or r.conflicts or r.merged_files]
        if details:
            click.echo(f"\n{report.ref} ({report.commit[:12]}):")
            for result in details:
                for line in patch_lines(result):
                    click.echo(line)


@click.command("check")
@click.option("--ref", "refs", multiple=True, required=True, help="A ref to check (repeatable).")
@click.option(
    "--junit",
    "junit_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Also write the results as JUnit XML to this file, for CI.",
)
@install_option
@patches_option
@json_option
def command(
    refs: tuple[str, ...],
    junit_path: Path | None,
    install_path: Path | None,
    patches_dir: Path | None,
    as_json: bool,
) -> int:
    """Show the outcome of every patch against each REF, touching nothing.

    Use it in CI against each new upstream tag, or before an update against the fetched
    upstream branch. Exit 3 when a patch would conflict or is invalid on any ref.

    \b
    Example:
      patchkeeper check --ref v0.22.0 --ref origin/main --json
      patchkeeper check --ref "$NEW_TAG" --junit patchkeeper.xml    # in CI
    """
    if junit_path is not None and not junit_path.parent.is_dir():
        raise UserError(f"{junit_path.parent}: no such folder for --junit")
    workspace = open_workspace(install_path, patches_dir)
    reports = check_refs(
        workspace.install.path, workspace.patch_set, refs, workspace.settings.version_file
    )
    code = tree_exit_code(
        [r for report in reports for r in report.results], pending_needs_attention=False
    )
    if junit_path is not None:
        from patchkeeper.junit import write_junit

        write_junit(reports, junit_path)
    if as_json:
        emit_json(
            "check",
            code,
            patch_set=workspace.patch_set_label,
            targets=[
                {
                    "ref": r.ref,
                    "commit": r.commit,
                    "version": str(r.version.version) if r.version.version else None,
                    "patches": [patch_json(p) for p in r.results],
                }
                for r in reports
            ],
            patches=[
                {"name": p.name, "outcome": p.outcome, "ref": r.ref}
                for r in reports
                for p in r.results
            ],
        )
    else:
        render_table(reports)
        click.echo(f"patch set: {workspace.patch_set_label}")
    return code
