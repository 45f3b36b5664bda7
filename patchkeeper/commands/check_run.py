"""What `patchkeeper check` does once its options are read: open the workspace, select the
refs, check them, and write the report in the format asked for.

No click here: `cli.py` answers a plain `check` invocation (check_args.py) without loading
click, and the click command in check.py calls `run` the same way after its own checks.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from packaging.version import Version

    from patchkeeper.patchset.versions import VersionScheme


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
    since: Version | str | None,
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
    listed: dict[str, tuple[str, str]] = {}  # the chosen tags' commits and trees
    if tag_globs or since is not None:
        if since is not None:
            since = _since_in(since, workspace.settings.version_scheme)
        from patchkeeper.engine.tag_selection import select_tags  # --tags, --since only

        selection = select_tags(repo, tag_globs, since, workspace.settings.tags)
        tags, unknown = selection.tags, selection.unknown
        listed = {tag: objects for tag, objects in selection.objects.items() if tag not in refs}
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
            known=listed,
        )
    finally:
        meter.close()
    shared = {id(report.results): report.results for report in reports}  # once per list
    code = tree_exit_code(
        [r for results in shared.values() for r in results], pending_needs_attention=False
    )
    if junit_path is not None:
        from patchkeeper.report.junit import write_junit

        write_junit(reports, junit_path)
    label = workspace.patch_set_label
    if metrics_path is not None:
        from patchkeeper.commands.common import write_metrics
        from patchkeeper.report.check_document import targets_of

        targets = targets_of(reports)
        write_metrics(metrics_path, "check", code, {"install": str(repo), "targets": targets})
    if output == "json":
        from patchkeeper.report.check_document import emit_check_json

        emit_check_json(reports, code, label, tag_globs, since, fetch_remote, unknown)
    elif output == "junit":
        from patchkeeper.report.junit import junit_xml

        sys.stdout.buffer.write(junit_xml(reports))
        sys.stdout.flush()
    elif output == "github":
        from patchkeeper.report.annotations import emit_github

        emit_github(reports, workspace.patch_set, label)
    else:
        from patchkeeper.report.check_table import render_table, say_versions
        from patchkeeper.report.render import echo

        render_table(reports)
        say_versions(reports, unknown if since is not None else [], workspace.settings.tags)
        echo(f"patch set: {label}")
    return code


def _since_in(since: Version | str, scheme: VersionScheme) -> Version:
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
