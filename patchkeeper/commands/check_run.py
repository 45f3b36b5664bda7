"""What `patchkeeper check` does once its options are read: open the workspace, select the
refs, check them, and write the report in the format asked for.

No click here: `cli.py` answers a plain `check` invocation (check_args.py) without loading
click, and the click command in check.py calls `run` the same way after its own checks.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

# click.echo's own rule for escape sequences (`click._compat._ansi_re`)
_ANSI = r"\033\[[;?0-9]*[a-zA-Z]"


def echo(line: str) -> None:
    """LINE and a newline on stdout, as click.echo writes it under the CLI's colour setting
    (cli.py passes `color=use_colour() or None`): escape sequences are taken out when colour
    is off and stdout is no terminal."""
    from patchkeeper.report.render import use_colour

    if "\x1b" in line and not use_colour() and not sys.stdout.isatty():
        import re

        line = re.sub(_ANSI, "", line)
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def run_plain(
    options: dict[str, Any],
    *,
    fail: Callable[[str, int], NoReturn],
    fail_unexpected: Callable[[Exception], NoReturn],
) -> NoReturn:
    """`run` for a line check_args.py read, ended as cli.py ends a command click ran: the
    same exit codes, and FAIL and FAIL_UNEXPECTED (cli.py's) say what went wrong in one line."""
    try:
        code = run(**options)
    except (EOFError, KeyboardInterrupt):  # as click: a blank line after the terminal's ^C
        sys.stderr.write("\n")
        fail("aborted", 1)
    except BrokenPipeError:  # as click: exit 1, nothing said
        sys.exit(1)
    except Exception as exc:
        fail_unexpected(exc)
    sys.exit(code)


def run(
    *,
    refs: tuple[str, ...],
    tag_globs: tuple[str, ...],
    since: Any,
    fetch_remote: str | None,
    output: str,
    junit_path: Path | None,
    progress: bool | None,
    install_path: Path | None,
    patches_dir: Path | None,
    metrics_path: Path | None,
) -> int:
    """Check REFS and the tags TAG_GLOBS and SINCE select; write the report as OUTPUT (text,
    json, junit or github); the exit code. The options are valid: their usage errors are
    check.py's (and check_args.py takes only what has none)."""
    from patchkeeper.model.errors import UserError

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
        echo(f"patch set: {label}")
    return code


def _since_in(since, scheme):  # type: ignore[no-untyped-def]
    """--since read in SCHEME, the patch set's version scheme; a usage error when it is none."""
    from patchkeeper.patchset.versions import PEP440 as PEP440_SCHEME

    text = str(since)
    version = scheme.parse(text) if scheme is not PEP440_SCHEME else since
    if isinstance(version, str) or version is None:
        shown = text if len(text) <= 60 else f"{text[:57]}..."
        words = "PEP 440" if scheme is PEP440_SCHEME else scheme.name
        import click  # loaded already: --since is parsed by click (check_args.py leaves it)

        raise click.BadParameter(
            f"{shown!r} is not a {words} version (say 0.21 or 0.21.5)", param_hint="'--since'"
        )
    return version


def render_table(reports) -> None:  # type: ignore[no-untyped-def]
    """The text report (used by `demo` too)."""
    from patchkeeper.report.check_table import render_text
    from patchkeeper.report.render import use_colour

    for line in render_text(reports, colour=use_colour()):
        echo(line)


def _say_versions(reports, left_out, names) -> None:  # type: ignore[no-untyped-def]
    """Which version source answered for which refs (one line), each ref of unknown version
    with every reason, and the tags --since left out because their release is unknown (a
    CalVer name is never taken for a release number). JSON has every ref's reasons."""
    by_source: dict[str, list[str]] = {}
    for r in reports:
        if r.version.version is None:
            echo(f"version of {r.ref}: {r.version}")
        else:
            source = (r.version.answered or r.version.text).split(":")[0].split(" at ")[0]
            by_source.setdefault(source, []).append(r.ref)
    if by_source:
        said = [f"{source} for {_refs(refs)}" for source, refs in by_source.items()]
        echo(f"versions from: {'; '.join(said)}")
    for tag in left_out:
        echo(f"not judged: {names.unknown_reason(tag)}")


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
        targets=_targets_json(reports),  # written one by one (see emit_json)
        patches=_outcomes_json(reports),
    )


def _targets_json(reports):  # type: ignore[no-untyped-def]
    """Each ref's part of the document; refs that share their results (a tree judged already,
    checking.py) share the text of their patches, encoded once (report/json_text.py)."""
    from patchkeeper.report.json_text import Encoded
    from patchkeeper.report.render import patch_json

    last: tuple[list, Encoded] | None = None
    for report in reports:
        if last is None or last[0] is not report.results:
            last = (report.results, Encoded([patch_json(p) for p in report.results]))
        yield {"ref": report.ref, "commit": report.commit, **report.version.as_json(),
               "patches": last[1]}  # fmt: skip


def _outcomes_json(reports):  # type: ignore[no-untyped-def]
    """Every patch's outcome on every ref, each item encoded from text made once for refs
    that share their results."""
    from patchkeeper.report.json_text import Encoded, indented

    last: tuple[list, list[str]] | None = None
    for report in reports:
        if last is None or last[0] is not report.results:
            heads = [indented({"name": p.name, "outcome": p.outcome, "ref": ""})[:-4]
                     for p in report.results]  # fmt: skip
            last = (report.results, heads)
        tail = indented(report.ref) + "\n}"
        yield from (Encoded.text(head + tail) for head in last[1])


def _emit_github(reports, patch_set, label: str) -> None:  # type: ignore[no-untyped-def]
    """The text report for the log, an annotation per failing hunk, and the step summary."""
    from patchkeeper.report.annotations import annotations
    from patchkeeper.report.check_table import markdown_summary, render_text

    for line in render_text(reports, colour=False):
        echo(line)
    echo(f"patch set: {label}")
    for note in annotations(reports, patch_set):
        echo(note.command())
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as handle:
            handle.write(markdown_summary(reports, label))
