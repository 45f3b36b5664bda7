"""`check` results across many refs, said briefly: a table that fits 100 columns, the patches
that need work grouped over the refs where they do, and the same as Markdown for a CI step
summary, and `check`'s text report printed. Rendering only; the
results come from checking.py.

Few refs: the matrix (a row per patch, a column per ref). When that would be wider than 100
columns: a row per ref where some patch's outcome changed from the ref before it, with counts
per outcome, and one line for each run of refs with nothing new.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from patchkeeper.engine.checking import RefReport
from patchkeeper.model import outcomes as oc
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.report.render import echo, outcome_word, patch_lines, use_colour

if TYPE_CHECKING:
    from patchkeeper.patchset.version_sources import TagNames

WIDTH = 100
# (column header, what it counts) in the compact table.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("ok", oc.APPLIED),
    ("offset", oc.APPLIED_OFFSET),
    ("3-way", oc.MERGED_3WAY),
    ("has-it", oc.UPSTREAM_HAS_IT),
    ("n/a", oc.NOT_APPLICABLE),
    ("conflict", oc.CONFLICT),
    ("invalid", oc.INVALID),
    ("other", ""),  # anything else, and a not-applicable that could not be decided
)
_COLUMN = {outcome: i for i, (_, outcome) in enumerate(COLUMNS)}  # "" is "other"'s
_SHORT = {outcome: head for head, outcome in COLUMNS if outcome}
Summary = TypeVar("Summary")


def short(outcome: str | None) -> str:
    """An outcome as the compact table's column names say it."""
    if outcome is None:
        return "-"
    return _SHORT.get(outcome, outcome)


def word(result: PatchResult) -> str:
    """The outcome as the tables say it (an undecided not-applicable is marked)."""
    return f"{result.outcome} (undecided)" if result.undecided else result.outcome


def counts(results: Sequence[PatchResult]) -> list[int]:
    row = [0] * len(COLUMNS)
    other = _COLUMN[""]
    for result in results:
        row[other if result.undecided else _COLUMN.get(result.outcome, other)] += 1
    return row


def needs_work(result: PatchResult) -> bool:
    return result.outcome in oc.FAILED or result.needs_a_person


def per_results(
    reports: Sequence[RefReport], summarise: Callable[[list[PatchResult]], Summary]
) -> list[Summary]:
    """SUMMARISE(report.results) for each of REPORTS, made once for each results list: refs
    whose tree was judged already share the very same list (checking.py), so many such tags
    cost one summary, not one each."""
    made: dict[int, Summary] = {}
    out = []
    for report in reports:
        key = id(report.results)  # the lists live as long as REPORTS: no id is reused
        if key not in made:
            made[key] = summarise(report.results)
        out.append(made[key])
    return out


# ---------------------------------------------------------------- the model


@dataclass
class ChangedRow:
    """A ref where some outcome differs from the ref before it (or the first ref), and the
    refs after it that have the same outcomes (folded into one line)."""

    report: RefReport
    changes: list[tuple[str, str | None, str]]  # (patch, outcome before, outcome now)
    same: list[RefReport] = field(default_factory=list)


def changed_rows(reports: Sequence[RefReport]) -> list[ChangedRow]:
    rows: list[ChangedRow] = []
    previous: dict[str, str] | None = None
    for report in reports:
        if rows and report.results is rows[-1].report.results:
            rows[-1].same.append(report)  # the very same results: the same outcomes
            continue
        now = {r.name: word(r) for r in report.results}
        if previous is not None and now == previous:
            rows[-1].same.append(report)
            continue
        changes = [
            (name, None if previous is None else previous.get(name), outcome)
            for name, outcome in now.items()
            if previous is None or previous.get(name) != outcome
        ]
        rows.append(ChangedRow(report, [] if previous is None else changes))
        previous = now
    return rows


@dataclass
class Trouble:
    """One patch that needs work (a conflict, an invalid patch, an undecided one) on some
    refs: which, and its full result on the newest of them."""

    name: str
    outcome: str
    refs: list[RefReport]
    result: PatchResult  # on the last ref of REFS


def troubles(reports: Sequence[RefReport]) -> list[Trouble]:
    found: dict[tuple[str, str], Trouble] = {}
    failing = per_results(
        reports, lambda results: [((r.name, word(r)), r) for r in results if needs_work(r)]
    )
    for report, keyed in zip(reports, failing, strict=True):
        for key, result in keyed:
            if key in found:
                found[key].refs.append(report)
                found[key].result = result
            else:
                found[key] = Trouble(*key, [report], result)
    order = {r.name: i for i, r in enumerate(reports[0].results)} if reports else {}
    return sorted(found.values(), key=lambda t: (order.get(t.name, 0), t.outcome))


def ref_span(some: Sequence[RefReport], every: Sequence[RefReport], most: int = 3) -> str:
    """SOME of EVERY (in EVERY's order), said briefly: `v1 .. v9 (9 refs)` when they are
    consecutive, else the first few and how many more."""
    names = [r.ref for r in some]
    if len(names) == 1:
        return names[0]
    wanted = {id(r) for r in some}
    positions = [i for i, r in enumerate(every) if id(r) in wanted]
    if len(positions) == len(names) and positions == list(range(positions[0], positions[-1] + 1)):
        return f"{names[0]} .. {names[-1]} ({len(names)} refs)"
    if len(names) <= most:
        return ", ".join(names)
    return f"{', '.join(names[:most])} and {len(names) - most} more ({len(names)} refs)"


# ---------------------------------------------------------------- text


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 3)] + "..."


def matrix_width(reports: Sequence[RefReport]) -> int:
    names = [r.name for r in reports[0].results] if reports else []
    width = max([len(n) for n in names] + [5])
    return width + sum(2 + w for w in _matrix_columns(reports))


def _matrix_columns(reports: Sequence[RefReport]) -> list[int]:
    widest = per_results(reports, lambda results: max((len(word(r)) for r in results), default=0))
    return [
        max(len(report.ref), len(str(report.version)), cells)
        for report, cells in zip(reports, widest, strict=True)
    ]


def render_matrix(reports: Sequence[RefReport], *, colour: bool = True) -> list[str]:
    """A row per patch, a column per ref (its version under it), then each ref's offsets,
    merges and conflicts."""
    names = [r.name for r in reports[0].results] if reports else []
    width = max([len(n) for n in names] + [5])
    columns = _matrix_columns(reports)
    lines = [
        f"{'patch':<{width}}  "
        + "  ".join(f"{r.ref:<{w}}" for r, w in zip(reports, columns, strict=True)).rstrip(),
        f"{'':<{width}}  "
        + "  ".join(f"{r.version!s:<{w}}" for r, w in zip(reports, columns, strict=True)).rstrip(),
    ]
    for row, name in enumerate(names):
        cells = []
        for report, w in zip(reports, columns, strict=True):
            result = report.results[row]
            shown = outcome_word(result.outcome) if colour else result.outcome
            text = shown + (" (undecided)" if result.undecided else "")
            cells.append(text + " " * (w - len(word(result))))
        lines.append(f"{name:<{width}}  " + "  ".join(cells).rstrip())
    for report in reports:
        details = [
            r
            for r in report.results
            if r.offsets or r.conflicts or r.merged_files or (needs_work(r) and r.detail)
        ]
        if details:
            lines.append(f"\n{report.ref} ({report.commit[:12]}):")
            for result in details:
                lines += patch_lines(result, colour=colour)
    return lines


def render_compact(reports: Sequence[RefReport], *, colour: bool = True) -> list[str]:
    """A row per ref where something changed (counts per outcome, what changed), a line
    for each run of refs with nothing new, then every patch that needs work."""
    rows = changed_rows(reports)
    patches = len(reports[0].results) if reports else 0
    every = per_results(reports, counts)
    numbers_of = {id(report): numbers for report, numbers in zip(reports, every, strict=True)}
    shown = [
        i
        for i, (head, _) in enumerate(COLUMNS)
        if head in ("ok", "conflict") or any(row[i] for row in every)
    ]
    heads = [COLUMNS[i][0] for i in shown]
    ref_w = min(max([len(r.ref) for r in reports] + [3]), 22)
    ver_w = min(max([len(str(r.version.version or "?")) for r in reports] + [7]), 12)
    numbers_w = sum(max(len(h), 3) + 1 for h in heads)
    changes_w = max(WIDTH - (ref_w + 1 + ver_w + 1 + numbers_w), 12)
    lines = [
        f"{len(reports)} refs x {patches} patches; a row for each ref where an outcome "
        "changed from the ref before it",
        f"{'ref':<{ref_w}} {'version':<{ver_w}} "
        + " ".join(f"{h:>{max(len(h), 3)}}" for h in heads)
        + " changes",
    ]
    for row in rows:
        report = row.report
        numbers = numbers_of[id(report)]
        cells = " ".join(
            f"{numbers[i]:>{max(len(h), 3)}}" for i, h in zip(shown, heads, strict=True)
        )
        if not row.changes:
            said = "(first ref)" if row is rows[0] else ""
        else:
            said = "; ".join(
                f"{name} {short(before)}->{short(now)}" for name, before, now in row.changes[:3]
            )
            if len(row.changes) > 3:
                said += f"; +{len(row.changes) - 3} more"
        version = str(report.version.version or "?")
        lines.append(
            f"{_fit(report.ref, ref_w):<{ref_w}} {_fit(version, ver_w):<{ver_w}} {cells} "
            f"{_fit(said, changes_w)}".rstrip()
        )
        if row.same:
            span = ref_span(row.same, reports)
            lines.append(_fit(f"  ... {len(row.same)} more with the same outcomes: {span}", WIDTH))
    found = troubles(reports)
    if found:
        lines += ["", "needs work (details on the newest ref where it fails):"]
        for trouble in found:
            last = trouble.refs[-1]
            lines.append(
                f"  {trouble.name}: {trouble.outcome} on {ref_span(trouble.refs, reports)}"
            )
            _head, *rest = patch_lines(trouble.result, indent="    ", colour=False)
            why = f": {trouble.result.detail}" if trouble.result.detail else ""
            lines.append(_fit(f"    {last.ref}{why}", WIDTH))
            lines += [_fit(line, WIDTH) for line in rest]
    lines += ["", "offsets and 3-way merges on every ref: --format json"]
    return lines


def render_text(reports: Sequence[RefReport], *, colour: bool = True) -> list[str]:
    """The matrix when it fits in 100 columns, else the compact table."""
    if matrix_width(reports) <= WIDTH:
        return render_matrix(reports, colour=colour)
    return render_compact(reports, colour=colour)


def render_table(reports: Sequence[RefReport]) -> None:
    """The text report on stdout (`check`, and `demo` too)."""
    for line in render_text(reports, colour=use_colour()):
        echo(line)


def say_versions(reports: Sequence[RefReport], left_out: Sequence[str], names: TagNames) -> None:
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


# ---------------------------------------------------------------- Markdown


_MARKDOWN_SPECIAL = "\\`*_|"


def _md(text: str) -> str:
    """TEXT as literal Markdown text, in a table cell too: a backslash before each character
    that would start emphasis or code, or end a cell."""
    return "".join(f"\\{c}" if c in _MARKDOWN_SPECIAL else c for c in text)


def _code(text: str, *, in_table: bool = False) -> str:
    """TEXT as a Markdown code span: a fence longer than any run of backticks in it (a
    backslash escapes nothing inside code); in a table, `|` escaped so the cell goes on."""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    body = text.replace("|", "\\|") if in_table else text
    return f"{fence}{pad}{body}{pad}{fence}"


def markdown_summary(reports: Sequence[RefReport], patch_set: str) -> str:
    """A CI step summary: the compact table and the patches that need work."""
    found = troubles(reports)
    patches = len(reports[0].results) if reports else 0
    failing = {t.name for t in found}
    title = (
        f"{len(failing)} of {patches} patches need work"
        if failing
        else f"all {patches} patches apply or need nothing"
    )
    lines = [
        f"## patchkeeper check: {title}",
        "",
        f"{len(reports)} refs checked; patch set {_code(patch_set)}.",
        "",
        "| ref | version | " + " | ".join(head for head, _ in COLUMNS) + " | changes |",
        "|---|---|" + "---:|" * len(COLUMNS) + "---|",
    ]
    for row in changed_rows(reports):
        report = row.report
        numbers = " | ".join(str(n) for n in counts(report.results))
        said = "; ".join(f"{n} {b or '-'} → {a}" for n, b, a in row.changes) or "first ref"
        ref = _code(report.ref, in_table=True)
        lines.append(f"| {ref} | {report.version.version or '?'} | {numbers} | {_md(said)} |")
        if row.same:
            lines.append(
                f"| … {len(row.same)} more | | " + " | ".join("" for _ in COLUMNS)
                + f" | same outcomes: {_md(ref_span(row.same, reports))} |"
            )  # fmt: skip
    if found:
        lines += ["", "### Needs work", ""]
        for trouble in found:
            lines.append(
                f"- **{_md(trouble.name)}**: {trouble.outcome} on "
                f"{_md(ref_span(trouble.refs, reports))}"
            )
            detail = patch_lines(trouble.result, indent="", colour=False)
            lines += ["", "  ```", *[f"  {line}" for line in detail], "  ```"]
    return "\n".join(lines) + "\n"
