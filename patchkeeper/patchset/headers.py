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

import functools
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
_FIELD_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")  # `Name:` starts a field line
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


@dataclass(frozen=True, init=False)
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

    def __init__(
        self,
        fields: dict[str, str],
        values: dict[str, tuple[str, ...]],
        names: dict[str, str],
        lines: dict[str, int],
        free_text: tuple[str, ...],
        diff_start: int,
        problems: list[Problem] | None = None,
        warnings: list[Problem] | None = None,
    ) -> None:
        """The dataclass's own, in one write: a frozen dataclass's sets each field through
        `object.__setattr__`, half of what reading a short header costs (one per variant)."""
        self.__dict__.update(
            fields=fields, values=values, names=names, lines=lines, free_text=free_text,
            diff_start=diff_start, problems=[] if problems is None else problems,
            warnings=[] if warnings is None else warnings,
        )  # fmt: skip

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


def parse_header(path: Path, lines: list[str]) -> Header:
    """Read the header of LINES (a patch file's lines without line ends).

    One pass over the lines, each asked a few `startswith` and what its text before the first
    colon says (`_line_facts`, asked once per distinct line: a fix's variants repeat theirs)."""
    values: dict[str, list[str]] = {}
    names: dict[str, str] = {}
    numbers: dict[str, int] = {}
    free: list[str] = []
    problems: list[Problem] = []
    warnings: list[Problem] = []
    last: str | None = None  # the field a continuation line folds into
    count = len(lines)
    mail = count > 0 and lines[0].startswith("From ") and MBOX_RE.match(lines[0]) is not None
    index = 1 if mail else 0
    in_fields = True  # a blank line or free text ends the field block; known fields go on
    while index < count:
        line = lines[index]
        if (line.startswith(_STOPS) or line == "---") and (
            diff_starts(lines, index) or _quilt_index(lines, index) or line == "---"
        ):
            break
        if line[:1] in (" ", "\t") and last is not None and line.strip():
            values[last][-1] += "\n" + line.strip()  # a folded line
            index += 1
            continue
        name, key, value, lookalike = _line_facts(line)
        if lookalike is not None:
            why = f"{line.strip()[:60]!r} is not read as {lookalike}: write '{lookalike}: VALUE'"
            problems.append(Problem(path, index + 1, why))
        if key is not None and (in_fields or _known(key)):  # never a blank line
            if key not in values:
                names[key], numbers[key], values[key], last = name, index + 1, [value], key
            elif key in OUR_FIELDS:
                problems.append(Problem(path, index + 1, f"duplicate header {name!r}"))
                last = None
            else:
                warnings += _repeated(path, name, key, index + 1, numbers[key])
                values[key].append(value)
                last = key
        else:
            in_fields, last = False, None
            free.append(line if line.strip() else "")
        index += 1
    while index < count and not (lines[index].startswith(_STARTS) and diff_starts(lines, index)):
        problems += _own_field_after_separator(path, lines, index)
        index += 1  # a `---` separator, a diffstat, quilt's `Index:` and `====` lines
    found = {key: tuple(found) for key, found in values.items()}
    if "subject" in found:  # a mail's subject, with or without the mbox line
        found["subject"] = tuple(_SUBJECT_TAG_RE.sub("", v) for v in found["subject"])
    fields = {key: value[0] for key, value in found.items()}
    text = tuple("\n".join(free).strip("\n").split("\n")) if any(free) else ()
    return Header(fields, found, names, numbers, text, index, problems, warnings)


def _repeated(path: Path, name: str, key: str, number: int, first: int) -> list[Problem]:
    """A warning for field NAME (KEY) on line NUMBER when it may not repeat (first: FIRST)."""
    if key in REPEATABLE or key.startswith("bug-"):
        return []
    why = f"header {name!r} repeats the one on line {first}; both are kept, the first is used"
    return [Problem(path, number, why)]


def _line_facts(line: str) -> tuple[str, str | None, str, str | None]:
    """A header LINE (no folded line) read alone: the field's name as written, its key (lower
    case; None when the line is no field) and value, and the name of our own field the line
    is written like but is not (None when it is not so written). A short line is read once."""
    return _short_line_facts(line) if len(line) <= 256 else _facts_of(line)


def _facts_of(line: str) -> tuple[str, str | None, str, str | None]:
    head, colon, rest = line.partition(":")
    if not colon:
        return head, None, "", None
    key, lookalike = _head_facts(head)
    value = rest.lstrip(" \t") if key is not None else ""
    if value.startswith("//"):
        key = None  # a bare URL (`https://...`) is text, not a field named "https"
    return head, key, value.strip(), None if key in OUR_FIELDS else lookalike


_short_line_facts = functools.lru_cache(maxsize=4096)(_facts_of)


def _head_facts(head: str) -> tuple[str | None, str | None]:
    """What a header line's text before its first colon, HEAD, says: the field's key when
    HEAD is a field's name (lower case), and our own field's name when the line is written
    like that field but is not it (a lookalike ends at the line's first colon, so HEAD and
    the colon decide it). Asked once per distinct short HEAD: the variants of a set repeat
    the same few field names thousands of times."""
    return _short_head_facts(head) if len(head) <= 64 else _facts(head)


def _facts(head: str) -> tuple[str | None, str | None]:
    key = head.lower() if _FIELD_NAME_RE.fullmatch(head) else None
    return key, _lookalike_of(head + ":")


_short_head_facts = functools.lru_cache(maxsize=1024)(_facts)


def _known(key: str) -> bool:
    return key in _KNOWN or key.startswith(("bug-", "x-"))


def _lookalike_name(line: str) -> str | None:
    """The own field LINE starts with, however spaced and cased, as we write it; or None."""
    head, colon, _ = line.partition(":")
    return _head_facts(head)[1] if colon else None


def _lookalike_of(text: str) -> str | None:
    lookalike = _OWN_LOOKALIKE_RE.match(text)
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
