"""`check`'s JSON document: each ref's version and every patch's outcome, written as it is
made. Rendering only; the results come from checking.py.

Refs whose tree was judged already share their results list (checking.py): their patches'
text is encoded once and repeated (report/json_text.py), which keeps a check of many tags
cheap in time and memory.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from patchkeeper.report.render import emit_json, patch_json

if TYPE_CHECKING:
    from packaging.version import Version

    from patchkeeper.engine.checking import RefReport
    from patchkeeper.model.outcomes import PatchResult
    from patchkeeper.report.json_text import Encoded, Items


def targets_of(reports: Sequence[RefReport]) -> list[dict[str, Any]]:
    """Each ref's part of the document, as values (for `--metrics`): its version, where it
    was read, every patch's outcome; refs that share their results share that list."""
    from patchkeeper.report.check_table import per_results

    said = per_results(reports, lambda results: [patch_json(p) for p in results])
    return [
        {"ref": report.ref, "commit": report.commit, **report.version.as_json(), "patches": patches}
        for report, patches in zip(reports, said, strict=True)
    ]


def emit_check_json(
    reports: Sequence[RefReport],
    code: int,
    label: str,
    tag_globs: Sequence[str],
    since: Version | None,
    fetch_remote: str | None,
    unknown: list[str],
) -> None:
    """The document on stdout: the refs TAG_GLOBS and SINCE chose (UNKNOWN: tags of no known
    release), each ref's part, and every patch's outcome on every ref."""
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
        targets=targets_json(reports),  # written one by one (see emit_json)
        patches=outcomes_json(reports),
    )


def targets_json(reports: Sequence[RefReport]) -> Iterator[dict[str, Any]]:
    """Each ref's part of the document; refs that share their results (a tree judged already,
    checking.py) share the text of their patches, encoded once (report/json_text.py)."""
    from patchkeeper.report.json_text import Encoded

    last: tuple[list[PatchResult], Encoded] | None = None
    for report in reports:
        if last is None or last[0] is not report.results:
            last = (report.results, Encoded([patch_json(p) for p in report.results]))
        yield {"ref": report.ref, "commit": report.commit, **report.version.as_json(),
               "patches": last[1]}  # fmt: skip


def outcomes_json(reports: Sequence[RefReport]) -> Iterator[Items]:
    """Every patch's outcome on every ref: a ref's items as one text, from the text before
    the ref's name, made once for refs that share their results."""
    from patchkeeper.report.json_text import ITEM_LEVEL, Items, indented

    last: tuple[list[PatchResult], list[str]] | None = None
    end = "\n" + "  " * ITEM_LEVEL + "}"
    for report in reports:
        if last is None or last[0] is not report.results:
            heads = [indented({"name": p.name, "outcome": p.outcome, "ref": ""}, ITEM_LEVEL)
                     .removesuffix('""' + end) for p in report.results]  # fmt: skip
            last = (report.results, heads)
        if last[1]:
            tail = indented(report.ref) + end
            yield Items([head + tail for head in last[1]])
