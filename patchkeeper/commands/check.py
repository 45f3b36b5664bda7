"""`patchkeeper check`: how every patch would fare on each ref, touching nothing.

Refs come from `--ref` (each as given), `--tags GLOB` and `--since VERSION` (tags, ordered by
version); `--fetch` brings the remote's tags and branches first. `--format` says what comes
out: a text table (the matrix, or for many refs a compact table that fits 100 columns), one
JSON document, JUnit XML, or GitHub annotations with a step summary.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from patchkeeper.commands.common import install_option, metrics_option, patches_option

if TYPE_CHECKING:
    from packaging.version import Version

FORMATS = ("text", "json", "junit", "github")


class PEP440(click.ParamType):
    """A PEP 440 version; a text that is none is kept for the patch set's own version scheme
    (Debian, SemVer: `_since_in`), which is known only once the set is read."""

    name = "version"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> Version | str:
        from packaging.version import InvalidVersion, Version

        text = str(value)
        try:
            return Version(text)
        except (InvalidVersion, ValueError):  # ValueError: a number past int()'s digit limit
            return text


@click.command("check")
@click.option("--ref", "refs", multiple=True, help="A ref to check (repeatable).")
@click.option(
    "--tags",
    "tag_globs",
    multiple=True,
    metavar="GLOB",
    help="Check every tag matching GLOB (repeatable; `*` matches `/` too), in version order.",
)
@click.option(
    "--since",
    type=PEP440(),
    default=None,
    help="Only tags whose name is a version >= this (with no --tags: every such tag).",
)
@click.option(
    "--fetch",
    "fetch_remote",
    is_flag=False,
    flag_value="origin",
    default=None,
    metavar="[REMOTE]",
    help="Fetch REMOTE's tags and branches first (default origin); HEAD, branches and the "
    "work tree do not move.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(FORMATS),
    default=None,
    help="text (default), json, junit (XML on stdout), or github (annotations on the patch "
    "files, and a step summary when GITHUB_STEP_SUMMARY is set).",
)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option(
    "--junit",
    "junit_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Also write the results as JUnit XML to this file, for CI (`-`: stdout).",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress on stderr (default: only on a terminal, and only after a second).",
)
@install_option
@patches_option
@metrics_option
def command(
    refs: tuple[str, ...],
    tag_globs: tuple[str, ...],
    since: Version | str | None,
    fetch_remote: str | None,
    output_format: str | None,
    as_json: bool,
    junit_path: Path | None,
    progress: bool | None,
    install_path: Path | None,
    patches_dir: Path | None,
    metrics_path: Path | None,
) -> int:
    """Show the outcome of every patch against each ref, touching nothing.

    Refs are each --ref, and the tags --tags and --since select (in version order). Use it in
    CI against each new upstream tag, or before an update against the fetched upstream
    branch. Exit 3 when a patch would conflict or is invalid on any ref; 5 when one could
    not be judged (unknown version) or --fetch failed; 2 when nothing matches.

    \b
    Example:
      patchkeeper check --ref v2026.10.1 --ref origin/main --json
      patchkeeper check --fetch --tags 'v*' --since 0.21 --format github    # in CI
      patchkeeper check --ref "$NEW_TAG" --junit patchkeeper.xml
    """
    if as_json and output_format not in (None, "json"):
        raise click.UsageError("--json and --format are two ways to say one thing: give one")
    output = "json" if as_json else output_format or "text"
    if not (refs or tag_globs or since is not None):
        raise click.UsageError("say which refs: --ref REF, --tags GLOB or --since VERSION")
    if junit_path is not None and str(junit_path) == "-":  # stdout: the XML is the output
        if output not in ("text", "junit"):
            raise click.UsageError(f"--junit - and --format {output} both write to stdout")
        output, junit_path = "junit", None
    from patchkeeper.commands.check_run import run

    return run(
        refs=refs,
        tag_globs=tag_globs,
        since=since,
        fetch_remote=fetch_remote,
        output=output,
        junit_path=junit_path,
        progress=progress,
        install_path=install_path,
        patches_dir=patches_dir,
        metrics_path=metrics_path,
    )
