"""Which hunks of a diff taken from the work tree are a patch's own, for `refresh`.

`refresh` takes a patch's files from the work tree, and the operator may have edited one of
them elsewhere for reasons of their own. Such an edit is not the fix: taken into the patch, a
later `unapply` would take the operator's line out with it. A hunk is the patch's when it
changes a line the patch as it stood changes (its added or removed lines, the content a hand
fix carries over), or when it lies where one of the patch's hunks lies (the lines it spans,
context included). Any other hunk is left out of the patch, and said (`FILE:LINE`): it stays in
the work tree as the operator's edit. A file the patch creates or deletes is all its own.
"""

from __future__ import annotations

import re

from patchkeeper.engine.diffs import split_hunks

_HUNK_RE = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _span(hunk: bytes) -> tuple[int, int]:
    """The old file's lines HUNK spans, context included, as [start, end)."""
    match = _HUNK_RE.match(hunk)
    if match is None:
        return 0, 0
    start, count = int(match[1]), int(match[2] if match[2] is not None else 1)
    return start, start + max(count, 1)


def _changed(hunk: bytes) -> set[bytes]:
    """The lines HUNK adds or removes, stripped, blank ones aside."""
    body = hunk.split(b"\n")[1:]
    return {line[1:].strip() for line in body if line[:1] in (b"+", b"-") and line[1:].strip()}


def _first_changed_line(hunk: bytes) -> int:
    """The work tree's line number where HUNK's first change is."""
    match = _HUNK_RE.match(hunk)
    line = int(match[3]) if match else 0
    for text in hunk.split(b"\n")[1:]:
        if text[:1] in (b"+", b"-"):
            break
        line += 1
    return line


def _whole_file(header: bytes) -> bool:
    return any(
        mark in header for mark in (b"\nnew file mode ", b"\ndeleted file mode ", b"--- /dev/null")
    )


def own_hunks(taken: bytes, patch: bytes) -> tuple[bytes, list[str]]:
    """TAKEN (a diff from the work tree) with only the hunks that are PATCH's own (PATCH: the
    patch's diff as recorded or as written), and `FILE:LINE` for each hunk left out."""
    theirs: dict[str, tuple[list[tuple[int, int]], set[bytes]]] = {}
    for path, _, hunks in split_hunks(patch):
        spans, lines = theirs.setdefault(path, ([], set()))
        spans += [_span(hunk) for hunk in hunks]
        for hunk in hunks:
            lines |= _changed(hunk)
    kept: list[bytes] = []
    left_out: list[str] = []
    for path, header, hunks in split_hunks(taken):
        spans, lines = theirs.get(path, ([], set()))
        if _whole_file(header) or not hunks:
            kept.append(header + b"".join(hunks))
            continue
        own = []
        for hunk in hunks:
            start, end = _span(hunk)
            if _changed(hunk) & lines or any(start < e and s < end for s, e in spans):
                own.append(hunk)
            else:
                left_out.append(f"{path}:{_first_changed_line(hunk)}")
        if own:
            kept.append(header + b"".join(own))
    return b"".join(kept), left_out
