"""A patch file's header, as people write it: DEP-3, git format-patch, gbp pq, quilt.

Users bring the series they already have, so the header is read the way its writers mean it:

- DEP-3 (Debian): `Field: value` lines, a folded `Description`, fields that may repeat
  (`Bug`, `Bug-Debian`, `Author`, ...) kept as lists, any other field (`X-...`,
  `Upstream-Author`) kept as written, and free text after the fields.
- git format-patch and gbp pq: `From:`/`Date:`/`Subject:`, with or without the mbox
  `From <sha>` line; the body and its trailers; `---`, a diffstat, then the diff.
- quilt: `Index: FILE` and a `====` rule before each file's diff; header-less diffs.

What does not stop the diff from being read is a warning (file and line), never a refusal:
only patchkeeper's own fields (`Applies-To`, `Smoke`, ...) are strict, since the engine acts
on them, and a line that only looks like one of them (`Applies To:`, `Applies-To :`), or one
written after the `---` line, is a problem too: read as text, it would silently drop a range.
A file with no diff at all and nothing that looks like one is an empty patch: quilt applies
it as empty, and so does patchkeeper (said as such); one whose header says a diff was meant
(our own fields, `---`, a diffstat, a mail header) is truncated, not empty.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from patchkeeper.model.problems import Problem

DEP3_FIELDS = frozenset({
    "description", "subject", "origin", "bug", "forwarded", "author", "from", "reviewed-by",
    "acked-by", "last-update", "applied-upstream",
})  # fmt: skip
OUR_FIELDS = frozenset(
    {"applies-to", "upstream-fixed-in", "upstream-has", "base", "smoke", "choose"}
)
MAIL_FIELDS = frozenset({
    "from", "date", "subject", "mime-version", "content-type", "content-transfer-encoding",
    "message-id", "in-reply-to", "references",
})  # fmt: skip
TRAILERS = frozenset({
    "signed-off-by", "reviewed-by", "acked-by", "tested-by", "reported-by", "suggested-by",
    "co-authored-by", "co-developed-by", "cc", "fixes", "link", "closes",
})  # fmt: skip
# Fields a header may carry more than once (DEP-3's Bug, Bug-<Vendor>, Author/From, review
# trailers): every value is kept, in order, without a warning.
REPEATABLE = frozenset({"bug", "author", "from", "reviewed-by", "acked-by"}) | TRAILERS
_KNOWN = DEP3_FIELDS | OUR_FIELDS | MAIL_FIELDS | TRAILERS
_FIELD_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*):[ \t]*(.*)$")
MBOX_RE = re.compile(r"^From [0-9a-f]{40} ")
_SUBJECT_TAG_RE = re.compile(r"^\[[^]]*PATCH[^]]*\]\s*")
HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
# One of our own field names, whatever its case and the spaces, `-` or `_` in and after it.
_OWN_LOOKALIKE_RE = re.compile(
    r"^\s*(?:"
    + "|".join(
        f"(?P<{key.replace('-', '_')}>" + r"[\s_-]*".join(key.split("-")) + ")"
        for key in sorted(OUR_FIELDS)
    )
    + r")\s*:",
    re.IGNORECASE,
)
_DIFFSTAT_RE = re.compile(r"^ \S.* \| +(\d+ ?[-+]*|Bin .*)$|^ \d+ files? changed")
_STARTS = ("diff --git ", "--- ")  # what every line `diff_starts` says yes to starts with
_STOPS = (*_STARTS, "Index: ")  # and every line where a header ends, but `---` itself
_DIFF_LIKE = ("diff ", "--- ", "+++ ", "@@ ", "Index: ", "GIT binary patch", "Binary files ")


@dataclass(frozen=True)
class Header:
    """A parsed header. FIELDS holds each field's first value (folded lines joined by "\\n"),
    VALUES every value in order; NAMES the field as written; LINES its first line number."""

    fields: dict[str, str]
    values: dict[str, tuple[str, ...]]
    names: dict[str, str]
    lines: dict[str, int]
    free_text: tuple[str, ...]
    diff_start: int  # index of the first diff line (len(lines): none)
    problems: list[Problem] = field(default_factory=list)  # our own fields, strictly
    warnings: list[Problem] = field(default_factory=list)

    @classmethod
    def none(cls) -> Header:
        """No header at all."""
        return cls({}, {}, {}, {}, (), 0)

    @property
    def unknown(self) -> dict[str, tuple[str, ...]]:
        """Fields outside DEP-3, mail and our own (`X-...`, `Upstream-Author`): kept, shown."""
        return {
            self.names[key]: values
            for key, values in self.values.items()
            if key not in _KNOWN and not key.startswith("bug-")
        }


def diff_starts(lines: list[str], index: int) -> bool:
    """Whether a diff starts at LINES[INDEX]: a git diff (`diff --git`), or a plain one as
    quilt and `diff -u` write it (`--- OLD`, `+++ NEW`, then a hunk)."""
    line = lines[index]
    if line.startswith("diff --git "):
        return True
    return (
        line.startswith("--- ")
        and index + 2 < len(lines)
        and lines[index + 1].startswith("+++ ")
        and HUNK_RE.match(lines[index + 2]) is not None
    )


# A line that starts a diff (`diff_starts`) in a file's bytes: ASCII digits only, so every
# match is a start `diff_starts` sees too, while a hunk written in other digits is left to it.
_DIFF_START_RE = re.compile(
    rb"^(?:diff --git |--- [^\n]*\n\+\+\+ [^\n]*\n@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@)", re.M
)


def header_end(data: bytes) -> int | None:
    """Where a line that starts a diff ends its match in DATA (a patch file's beginning), or
    None while DATA holds none: `parse_header` reads the same header from DATA up to there as
    from the whole file, since it stops at the first line that starts a diff (this one, or an
    earlier one whose two next lines are in DATA too)."""
    match = _DIFF_START_RE.search(data)
    return None if match is None else match.end()


def _quilt_index(lines: list[str], index: int) -> bool:
    """quilt's `Index: FILE` line with its `====` rule below: the first file's diff begins."""
    return (
        lines[index].startswith("Index: ")
        and index + 1 < len(lines)
        and lines[index + 1].startswith("====")
    )


def looks_like_diff(lines: list[str]) -> bool:
    """Whether any line looks like part of a diff (so a file without a readable one is broken,
    not empty)."""
    return any(line.startswith(_DIFF_LIKE) for line in lines)


class _Reader:
    """The state of reading one header, line by line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.values: dict[str, list[str]] = {}
        self.names: dict[str, str] = {}
        self.lines: dict[str, int] = {}
        self.free: list[str] = []
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []
        self.last: str | None = None  # the field a continuation line folds into

    def add(self, name: str, value: str, number: int) -> None:
        key = name.lower()
        if key in self.values:
            if key in OUR_FIELDS:
                self.problems.append(Problem(self.path, number, f"duplicate header {name!r}"))
                self.last = None
                return
            if key not in REPEATABLE and not key.startswith("bug-"):
                first = self.lines[key]
                self.warnings.append(
                    Problem(
                        self.path,
                        number,
                        f"header {name!r} repeats the one on line {first}; both are kept, "
                        "the first is used",
                    )
                )
        else:
            self.names[key], self.lines[key] = name, number
        self.values.setdefault(key, []).append(value.strip())
        self.last = key

    def fold(self, line: str) -> None:
        assert self.last is not None
        self.values[self.last][-1] += "\n" + line.strip()


def parse_header(path: Path, lines: list[str]) -> Header:
    """Read the header of LINES (a patch file's lines without line ends)."""
    reader = _Reader(path)
    mail = bool(lines) and MBOX_RE.match(lines[0]) is not None
    index = 1 if mail else 0
    in_fields = True  # a blank line or free text ends the field block; known fields go on
    while index < len(lines):
        line = lines[index]
        if (line.startswith(_STOPS) or line == "---") and (
            diff_starts(lines, index) or _quilt_index(lines, index) or line == "---"
        ):
            break
        match = _FIELD_RE.match(line)
        if match and (match[2] or "").startswith("//"):
            match = None  # a bare URL (`https://...`) is text, not a field named "https"
        if line[:1] in (" ", "\t") and line.strip() and reader.last is not None:
            reader.fold(line)
            index += 1
            continue
        if (lookalike := _own_lookalike(line, match)) is not None:
            why = f"{line.strip()[:60]!r} is not read as {lookalike}: write '{lookalike}: VALUE'"
            reader.problems.append(Problem(path, index + 1, why))
        if not line.strip():
            in_fields, reader.last = False, None
            reader.free.append("")
        elif match and (in_fields or _known(match[1].lower())):
            reader.add(match[1], match[2] or "", index + 1)
        else:
            in_fields, reader.last = False, None
            reader.free.append(line)
        index += 1
    while index < len(lines) and not (
        lines[index].startswith(_STARTS) and diff_starts(lines, index)
    ):
        reader.problems += _own_field_after_separator(path, lines, index)
        index += 1  # a `---` separator, a diffstat, quilt's `Index:` and `====` lines
    values = {key: tuple(found) for key, found in reader.values.items()}
    if "subject" in values:  # a mail's subject, with or without the mbox line
        values["subject"] = tuple(_SUBJECT_TAG_RE.sub("", v) for v in values["subject"])
    fields = {key: found[0] for key, found in values.items()}
    free = tuple("\n".join(reader.free).strip("\n").split("\n")) if any(reader.free) else ()
    return Header(
        fields, values, reader.names, reader.lines, free, index, reader.problems, reader.warnings
    )


def _known(key: str) -> bool:
    return key in _KNOWN or key.startswith(("bug-", "x-"))


def _own_lookalike(line: str, match: re.Match[str] | None) -> str | None:
    """Our own field's name when LINE is written like it but is not it (`Applies To:`,
    `Applies-To :`, `applies_to:`), or None."""
    if match is not None and match[1].lower() in OUR_FIELDS:
        return None  # the field itself
    return _lookalike_name(line)


def _lookalike_name(line: str) -> str | None:
    """The own field LINE starts with, however spaced and cased, as we write it; or None."""
    lookalike = _OWN_LOOKALIKE_RE.match(line)
    if lookalike is None:
        return None
    key = str(lookalike.lastgroup)
    return "-".join(part.capitalize() for part in key.split("_"))


def _own_field_after_separator(path: Path, lines: list[str], index: int) -> list[Problem]:
    """A problem when LINES[INDEX], between the `---` line and the diff, is one of our own
    fields: git and quilt skip what stands there, so its range or check would vanish."""
    if (name := _lookalike_name(lines[index])) is None:
        return []
    why = f"{name} after the '---' line is not read: move it above '---'"
    return [Problem(path, index + 1, why)]


def empty_patch(header: Header, lines: list[str]) -> bool:
    """Whether a file without a diff is an empty patch (as quilt applies it) rather than a
    truncated one: it carries none of our own fields, no `---` line, no diffstat and no mail
    header (the mbox line, or a mail field DEP-3 does not have, such as `Date`)."""
    mail = bool(lines) and MBOX_RE.match(lines[0]) is not None
    return not (
        mail
        or header.values.keys() & (OUR_FIELDS | (MAIL_FIELDS - DEP3_FIELDS))
        or "---" in lines
        or any(_DIFFSTAT_RE.match(line) for line in lines)
    )
