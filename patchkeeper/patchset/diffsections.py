"""The file sections of a git diff in its plainest shape, read without unidiff.

Loading unidiff and parsing a patch with it costs more than the rest of reading a small
patch set (issue 30), and almost every patch is what `git diff` or `git format-patch`
writes: per file a `diff --git a/P b/P` line, a few extended header lines, `--- ` and `+++ `
naming the same path, hunks whose line counts add up. `plain_sections` reads exactly that
shape and answers what unidiff would (each section's source and target name, no parse
error); anything else (a rename or copy, a quoted or spaced path, a line unidiff might read
another way, a hunk that does not add up) is None, and unidiff reads the diff as ever
(diff.py), with its own words for what is wrong. tests/test_diffsections.py holds the two
to the same answers.
"""

from __future__ import annotations

import re

from patchkeeper.patchset.headers import HUNK_RE

DEV_NULL = "/dev/null"
_GIT_LINE = "diff --git a/"
_MODE_RE = re.compile(r"^(new file mode|deleted file mode|old mode|new mode) \d+$")
_NO_NEWLINE = "\\ No newline at end of file"


def plain_sections(body: list[str]) -> list[tuple[str, str]] | None:
    """(source, target) of each file section of BODY (the diff's lines, no line ends), as
    unidiff names them (`a/P`, `b/P`, `/dev/null`), when BODY has the plainest shape; else
    None."""
    end = len(body)
    while end and not body[end - 1]:
        end -= 1  # blank lines at the end: unidiff keeps them, as context or as patch info
    sections: list[tuple[str, str]] = []
    at = 0
    while at < end:
        names = _section_names(body[at])
        if names is None:
            return None
        source, target = names
        at += 1
        while at < end and body[at].startswith(("index ", "new ", "deleted ", "old ")):
            line = body[at]
            if not line.startswith("index ") and not _MODE_RE.match(line):
                return None
            if line.startswith("new file mode "):
                source = DEV_NULL
            elif line.startswith("deleted file mode "):
                target = DEV_NULL
            at += 1
        if at < end and body[at].startswith("--- "):
            if body[at] != f"--- {source}" or at + 1 >= end or body[at + 1] != f"+++ {target}":
                return None
            at = _hunks(body, at + 2, end)
            if at is None:
                return None
        sections.append((source, target))
    return sections or None


def _section_names(line: str) -> tuple[str, str] | None:
    """`diff --git a/P b/P` -> (`a/P`, `b/P`), for a path P without space, tab or quote."""
    if not line.startswith(_GIT_LINE) or '"' in line or "\t" in line:
        return None
    name, separator, again = line[len(_GIT_LINE) :].partition(" b/")
    if not separator or not name or " " in name or again != name:
        return None
    return f"a/{name}", f"b/{name}"


def _hunks(body: list[str], at: int, end: int) -> int | None:
    """Past the hunks from AT (each adding up, unidiff's way: a blank line is context, a
    `\\` line counts nothing); None when one does not add up or a line is not a hunk's."""
    while at < end and (header := HUNK_RE.match(body[at])) is not None:
        old = 1 if header[2] is None else int(header[2])
        new = 1 if header[4] is None else int(header[4])
        if not old and not new:
            return None  # unidiff reads one line into such a hunk before it counts
        at += 1
        while old or new:
            if at >= end:
                return None
            kind = body[at][:1]
            at += 1
            if kind in (" ", ""):
                old, new = old - 1, new - 1
            elif kind == "-":
                old -= 1
            elif kind == "+":
                new -= 1
            elif kind != "\\":
                return None
            if old < 0 or new < 0:
                return None
        if at < end and body[at].startswith("\\"):
            if not body[at].startswith(_NO_NEWLINE):
                return None
            at += 1
    if at < end and not body[at].startswith(_GIT_LINE):
        return None
    return at
