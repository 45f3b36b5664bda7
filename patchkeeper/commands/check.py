"""`patchkeeper check`: how every patch would fare on each ref, touching nothing.

Refs come from `--ref` (each as given), `--tags GLOB` and `--since VERSION` (tags, ordered by
version); `--fetch` brings the remote's tags and branches first. `--format` says what comes
out: a text table (the matrix, or for many refs a compact table that fits 100 columns), one
JSON document, JUnit XML, or GitHub annotations with a step summary.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from patchkeeper.commands.common import install_option, metrics_option, patches_option

FORMATS = ("text", "json", "junit", "github")


class PEP440(click.ParamType):
    """A PEP 440 version; a text that is none is kept for the patch set's own version scheme
    (Debian, SemVer: `_since_in`), which is known only once the set is read."""

    name = "version"

    def convert(self, value, param, ctx):  # type: ignore[no-untyped-def]
        from packaging.version import InvalidVersion, Version

        text = str(value)
        try:
            return Version(text)
        except (InvalidVersion, ValueError):  # ValueError: a number past int()'s digit limit
            return text


def _since_in(since, scheme):  # type: ignore[no-untyped-def]
    """--since read in SCHEME, the patch set's version scheme; a usage error when it is none."""
    from patchkeeper.patchset.versions import PEP440 as PEP440_SCHEME

    text = str(since)
    version = scheme.parse(text) if scheme is not PEP440_SCHEME else since
    if isinstance(version, str) or version is None:
        shown = text if len(text) <= 60 else f"{text[:57]}..."
        words = "PEP 440" if scheme is PEP440_SCHEME else scheme.name
        raise click.BadParameter(
            f"{shown!r} is not a {words} version (say 0.21 or 0.21.5)", param_hint="'--since'"
        )
    return version


def render_table(reports) -> None:  # type: ignore[no-untyped-def]
    """The text report (used by `demo` too)."""
    from patchkeeper.report.check_table import render_text
    from patchkeeper.report.render import use_colour

    for line in render_text(reports, colour=use_colour()):
        click.echo(line)


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
    since,  # type: ignore[no-untyped-def]
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
    from patchkeeper.model.errors import UserError

    if as_json and output_format not in (None, "json"):
        raise click.UsageError("--json and --format are two ways to say one thing: give one")
    output = "json" if as_json else output_format or "text"
    if not (refs or tag_globs or since is not None):
        raise click.UsageError("say which refs: --ref REF, --tags GLOB or --since VERSION")
    if junit_path is not None and str(junit_path) == "-":  # stdout: the XML is the output
        if output not in ("text", "junit"):
            raise click.UsageError(f"--junit - and --format {output} both write to stdout")
        output, junit_path = "junit", None
    if junit_path is not None and not junit_path.parent.is_dir():
        raise UserError(f"{junit_path.parent}: no such folder for --junit")

    from patchkeeper.engine import checking
    from patchkeeper.install.workspace import open_workspace
    from patchkeeper.model.verdict import tree_exit_code
    from patchkeeper.report.progress import Progress

    workspace = open_workspace(install_path, patches_dir, deferred=True)  # read-only
    repo = workspace.install.path
    if fetch_remote is not None:
        checking.fetch(repo, fetch_remote)
    chosen = list(dict.fromkeys(refs))
    unknown: list[str] = []
    if tag_globs or since is not None:
        if since is not None:
            since = _since_in(since, workspace.settings.version_scheme)
        selection = checking.select_tags(repo, tag_globs, since, workspace.settings.tags)
        tags, unknown = selection.tags, selection.unknown
        if not tags:
            what = " or ".join(repr(g) for g in tag_globs) if tag_globs else "a version"
            floor = f", version >= {since}" if since is not None else ""
            raise UserError(
                f"{repo}: no tag matches {what}{floor} (fetch them with --fetch, or see "
                f"`git -C {repo} tag --list`)"
            )
        chosen += [tag for tag in tags if tag not in chosen]
    meter = Progress("check", len(chosen), "refs", enabled=progress)
    try:
        reports = checking.check_refs(
            repo,
            workspace.patch_set,
            chosen,
            workspace.settings,
            progress=lambda done, total, ref: meter.update(done, ref),
        )
    finally:
        meter.close()
    code = tree_exit_code(
        [r for report in reports for r in report.results], pending_needs_attention=False
    )
    if junit_path is not None:
        from patchkeeper.report.junit import write_junit

        write_junit(reports, junit_path)
    label = workspace.patch_set_label
    if metrics_path is not None:
        from patchkeeper.commands.common import write_metrics

        targets = [_target_json(r) for r in reports]
        write_metrics(metrics_path, "check", code, {"install": str(repo), "targets": targets})
    if output == "json":
        _emit_json(reports, code, label, tag_globs, since, fetch_remote, unknown)
    elif output == "junit":
        from patchkeeper.report.junit import junit_xml

        sys.stdout.buffer.write(junit_xml(reports))
        sys.stdout.flush()
    elif output == "github":
        _emit_github(reports, workspace.patch_set, label)
    else:
        render_table(reports)
        _say_versions(reports, unknown if since is not None else [], workspace.settings.tags)
        click.echo(f"patch set: {label}")
    return code


def _say_versions(reports, left_out, names) -> None:  # type: ignore[no-untyped-def]
    """Which version source answered for which refs (one line), each ref of unknown version
    with every reason, and the tags --since left out because their release is unknown (a
    CalVer name is never taken for a release number). JSON has every ref's reasons."""
    by_source: dict[str, list[str]] = {}
    for r in reports:
        if r.version.version is None:
            click.echo(f"version of {r.ref}: {r.version}")
        else:
            source = (r.version.answered or r.version.text).split(":")[0].split(" at ")[0]
            by_source.setdefault(source, []).append(r.ref)
    if by_source:
        said = [f"{source} for {_refs(refs)}" for source, refs in by_source.items()]
        click.echo(f"versions from: {'; '.join(said)}")
    for tag in left_out:
        click.echo(f"not judged: {names.unknown_reason(tag)}")


def _refs(refs: list[str]) -> str:
    return ", ".join(refs) if len(refs) <= 3 else f"{refs[0]} .. {refs[-1]} ({len(refs)} refs)"


def _target_json(report) -> dict:  # type: ignore[no-untyped-def]
    """One ref's part of the document: its version, where it was read, every patch's outcome."""
    from patchkeeper.report.render import patch_json

    return {
        "ref": report.ref,
        "commit": report.commit,
        **report.version.as_json(),
        "patches": [patch_json(p) for p in report.results],
    }


def _emit_json(reports, code, label, tag_globs, since, fetch_remote, unknown) -> None:  # type: ignore[no-untyped-def]
    from patchkeeper.report.render import emit_json

    emit_json(
        "check",
        code,
        patch_set=label,
        selection={
            "tags": list(tag_globs),
            "since": str(since) if since is not None else None,
            "fetched": fetch_remote,
            "unknown_release": unknown,
        },
        targets=(_target_json(r) for r in reports),  # written one by one (see emit_json)
        patches=(
            {"name": p.name, "outcome": p.outcome, "ref": r.ref} for r in reports for p in r.results
        ),
    )


def _emit_github(reports, patch_set, label: str) -> None:  # type: ignore[no-untyped-def]
    """The text report for the log, an annotation per failing hunk, and the step summary."""
    from patchkeeper.report.annotations import annotations
    from patchkeeper.report.check_table import markdown_summary, render_text

    for line in render_text(reports, colour=False):
        click.echo(line)
    click.echo(f"patch set: {label}")
    for note in annotations(reports, patch_set):
        click.echo(note.command())
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as handle:
            handle.write(markdown_summary(reports, label))
