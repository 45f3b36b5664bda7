"""`check --format github`: GitHub Actions workflow commands that point at the patch file and
the very hunk that failed (`::error file=PATCH,line=N::...`), one per patch file and hunk
however many refs it fails on, and a step summary in Markdown.

GitHub shows an annotation on the file when its path is relative to the repository root
(`GITHUB_WORKSPACE`), which is where a patch set's own repository is checked out.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from patchkeeper.engine.checking import RefReport
from patchkeeper.model import outcomes as oc
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.diffpaths import diff_path, git_line_paths
from patchkeeper.patchset.model import PatchSet
from patchkeeper.report.check_table import (
    markdown_summary,
    needs_work,
    per_results,
    ref_span,
    render_text,
)
from patchkeeper.report.render import echo, upstream_took_lines

if TYPE_CHECKING:  # made by engine/conflicts.py
    from patchkeeper.model.conflict_details import HunkConflict


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


@dataclass
class Annotation:
    """One GitHub annotation on a patch file."""

    level: str  # error, warning, notice
    file: Path
    line: int | None
    title: str
    message: str
    refs: list[RefReport] = field(default_factory=list)

    def command(self) -> str:
        where = [f"file={escape_property(shown_path(self.file))}"]
        if self.line:
            where.append(f"line={self.line}")
        where.append(f"title={escape_property(self.title)}")
        return f"::{self.level} {','.join(where)}::{escape_data(self.message)}"


def shown_path(path: Path) -> str:
    """PATH relative to the workspace (GITHUB_WORKSPACE, else the current folder) when it is
    inside it, as GitHub wants it; else absolute."""
    base = Path(os.environ.get("GITHUB_WORKSPACE") or os.getcwd())
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except (ValueError, OSError):
        return str(path)


def hunk_line(patch_file: Path, file: str, hunk: int) -> int | None:
    """The line of PATCH_FILE where the section for FILE starts (HUNK 0) or where its HUNK-th
    `@@` line is (1-based), or None when it cannot be found."""
    try:
        lines = patch_file.read_text(errors="replace").split("\n")
    except OSError:
        return None
    start = None
    for number, line in enumerate(lines):
        if line.startswith("diff --git ") and file in git_line_paths(line[len("diff --git ") :]):
            start = number
            break
        if line.startswith("+++ ") and diff_path(line[4:].split("\t")[0]) == file:
            start = max(number - 1, 0)
            break
    if start is None:
        return None
    if hunk == 0:
        return start + 1
    seen = 0
    for number in range(start + 1, len(lines)):
        if lines[number].startswith("diff --git "):
            break
        if lines[number].startswith("@@"):
            seen += 1
            if seen == hunk:
                return number + 1
    return start + 1


def _variant_file(patch_set: PatchSet, result: PatchResult) -> Path:
    if result.variant:
        return patch_set.root / result.variant
    patch = patch_set.by_name(result.name)
    if patch is not None and patch.variants:
        return patch.variants[0].path
    return patch_set.root / "series"


def _first_section_line(path: Path) -> int | None:
    try:
        lines = path.read_text(errors="replace").split("\n")
    except OSError:
        return None
    return next((n + 1 for n, line in enumerate(lines) if line.startswith("diff --git ")), None)


def _detail_line(path: Path, detail: str) -> int | None:
    """The line a reason names in PATH (`PATH:LINE: what is wrong`, as an invalid patch's
    says it: the bad header line), or None."""
    prefix = f"{path}:"
    if not detail.startswith(prefix):
        return None
    number = detail[len(prefix) :].split(":", 1)[0]
    return int(number) if number.isdigit() else None


def _conflict_message(conflict: HunkConflict) -> list[str]:
    where = f"hunk #{conflict.hunk} ({conflict.header})" if conflict.hunk else "the whole file"
    lines = [f"{conflict.file}: {where}: {conflict.reason}"]
    for miss in conflict.mismatches[:5]:
        found = "the file ends" if miss.found is None else f"upstream has {miss.found!r}"
        lines.append(f"line {miss.line}: expected {miss.expected!r}, {found}")
    if conflict.expected and not conflict.mismatches:
        lines.append("expected upstream lines (none found nearby):")
        lines += [f"| {line}" for line in conflict.expected[:8]]
    return lines


def annotations(reports: Sequence[RefReport], patch_set: PatchSet) -> list[Annotation]:
    """One annotation per patch file and failing hunk (errors), per patch that could not be
    judged (warnings) and per patch upstream has (notices), each naming the refs."""
    found: dict[tuple, Annotation] = {}
    made_from: dict[tuple, PatchResult] = {}  # the result each annotation says now
    # Refs whose tree was judged already share their results list: its keys are made once,
    # and an annotation is made again only from a result that is not the one it says.
    keyed = per_results(reports, lambda results: [
        (key, make, result) for result in results for key, make in _keys(patch_set, result)
    ])  # fmt: skip
    for report, said in zip(reports, keyed, strict=True):
        for key, make, result in said:
            if key not in found:
                found[key] = make()
            elif made_from[key] is not result:
                latest = make()
                found[key].message, found[key].line = latest.message, latest.line
            made_from[key] = result
            found[key].refs.append(report)
    out = []
    for note in found.values():
        span = ref_span(note.refs, reports)
        note.title = f"{note.title} on {len(note.refs)} ref(s)"
        note.message = note.message.replace("{refs}", span)
        out.append(note)
    order = {"error": 0, "warning": 1, "notice": 2}
    return sorted(out, key=lambda a: order[a.level])


def _keys(patch_set: PatchSet, result: PatchResult):
    """(grouping key, a function making the annotation for RESULT) for each thing to say."""
    path = _variant_file(patch_set, result)
    name = result.name
    if result.outcome == oc.CONFLICT and result.conflicts:
        for conflict in result.conflicts:

            def make(conflict: HunkConflict = conflict) -> Annotation:
                body = _conflict_message(conflict) + upstream_took_lines(result.upstream_took)
                title = f"patchkeeper: {name} does not apply"
                if result.upstream_took is not None and result.upstream_took.appears:
                    title += f" ({result.upstream_took.qualifier()})"
                return Annotation(
                    "error",
                    path,
                    hunk_line(path, conflict.file, conflict.hunk),
                    title,
                    "\n".join([f"{name} does not apply on {{refs}}: {body[0]}", *body[1:]]),
                )

            yield (str(path), conflict.file, conflict.hunk, conflict.header), make
    elif result.outcome in oc.FAILED:

        def make_failed() -> Annotation:
            return Annotation(
                "error",
                path,
                _detail_line(path, result.detail) or _first_section_line(path),
                f"patchkeeper: {name} {result.outcome}",
                f"{name} is {result.outcome} on {{refs}}: {result.detail}",
            )

        yield (str(path), result.outcome, result.detail), make_failed
    elif needs_work(result):

        def make_warning() -> Annotation:
            return Annotation(
                "warning",
                path,
                None,
                f"patchkeeper: {name} could not be judged",
                f"{name} on {{refs}}: {result.detail or result.outcome}",
            )

        yield (str(path), "warning", result.outcome), make_warning
    elif result.outcome == oc.UPSTREAM_HAS_IT:

        def make_notice() -> Annotation:
            return Annotation(
                "notice",
                path,
                None,
                f"patchkeeper: upstream has {name}",
                f"upstream has {name} on {{refs}}: {result.detail}; retire the patch "
                "(drop it from series) once every install runs such a version",
            )

        yield (str(path), "notice"), make_notice


def emit_github(reports: Sequence[RefReport], patch_set: PatchSet, label: str) -> None:
    """`--format github`: the text report for the log, an annotation per failing hunk, and
    the step summary (appended to $GITHUB_STEP_SUMMARY when it is set)."""
    for line in render_text(reports, colour=False):
        echo(line)
    echo(f"patch set: {label}")
    for note in annotations(reports, patch_set):
        echo(note.command())
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as handle:
            handle.write(markdown_summary(reports, label))
