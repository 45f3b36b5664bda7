"""A variant `check` has not chosen yet, read from its head's bytes alone, when those bytes
prove what the strict reading (`parse.parse_data`) would say of them; otherwise not at all.

A set of variants is mostly variants no version of a check chooses: 30 per fix, one chosen.
What `check` asks of one it does not choose is its range and a few plain facts (`Applies-To`,
`Upstream-Fixed-In`, `Upstream-Has`, `Choose`, `Smoke`, whether it is `invalid`). `quick_read`
answers them with two searches of the head's bytes and the very functions, cached by value,
the strict reading turns those fields' values with, and makes no Header, no Path and no
fields dict: a `HeadOnly` makes them, by the strict reading of the same bytes, when first
asked (a message naming the file; a variant chosen is read whole, the strict way, and every
command but `check` reads every variant so: `load.inspect_patch_set`, `load_patch_set`).

It accepts only a head on which the strict reading has no problem and reads each of those
facts as it does; on anything else it declines (None) and the variant is read as before.
The predicate, on the head up to the line where its diff starts (`headers._DIFF_START_RE`):
ASCII (so valid UTF-8, and no Unicode space or case folding for a field name to hide
behind), no CR, no line that starts `From ` (an mbox line); every line written like our fields
(`headers._OWN_LOOKALIKE_RE`: any case, spaces, `_` or `-`) is one of `Applies-To`,
`Upstream-Fixed-In`, `Smoke`, `Choose`, `Base` (`port` writes one), written as its name (any
case) and a colon in column 0, stands before the header ends (a `---` line, quilt's `Index:`,
the diff), is not folded (the next line does not start with a space or a tab), appears once,
and holds a value the strict reading takes (not a bare `//...` URL, a range
`fields.specifier_set` accepts, a `Smoke` and a `Choose` with nothing wrong; any `Base`).
The version scheme must be PEP 440 (no conversion). tests/test_head_only.py holds every
acceptance to the strict reading.
"""

from __future__ import annotations

import functools
import os
import re
from functools import cached_property
from pathlib import Path
from stat import S_ISREG
from typing import Any

from patchkeeper.patchset.fields import specifier_set
from patchkeeper.patchset.headers import Header
from patchkeeper.patchset.model import PatchFile
from patchkeeper.patchset.parse import MAX_PATCH_BYTES, choice_field, parse_data, smoke_field
from patchkeeper.patchset.versions import PEP440, VersionScheme

HEAD = 4096  # the first read of a variant not chosen yet: its header, in nearly every file
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC  # as userfiles.read_user_file_head

# What `\s` is to the strict reading's str patterns in ASCII text, but the line's end: the
# bytes `\s` leaves out \x1c-\x1f, and a field's line ends at its "\n".
_SPACE = rb"[\t\x0b\x0c\x1c-\x1f\r ]*"
_GAP = rb"[\t\x0b\x0c\x1c-\x1f\r _-]*"  # `[\s_-]*`, between the words of a name
_OWN_NAME = rb"|".join(
    _GAP.join(words)
    for words in (
        (rb"applies", rb"to"), (rb"upstream", rb"fixed", rb"in"), (rb"upstream", rb"has"),
        (rb"base",), (rb"smoke",), (rb"choose",),
    )
)  # fmt: skip
# The patterns below read a file's bytes with a "\n" put before them, so that every line
# starts after a "\n" (a literal first character: the search skips from line to line).
# A line that starts a diff, as `headers._DIFF_START_RE` finds it.
_DIFF_LINE_RE = re.compile(
    rb"\n(?:diff --git |--- [^\n]*\n\+\+\+ [^\n]*\n@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@)"
)
# In a head before its diff, in order, each with the "\n" before it: where the strict
# reading's header ends before the diff (a `---` line, quilt's `Index:` and `====`), a line
# that starts `From ` (a mail's mbox line, when first), and every line the strict reading
# finds written like one of our own fields (`headers._OWN_LOOKALIKE_RE`), with the start of
# a next line that would fold into it. A plain `Base:` line is found without its value (any
# value the strict reading takes, but a `//...` URL): each variant `port` writes has its own,
# and the facts of a head are cached by its lines (`_facts`).
_HEAD_LINE_RE = re.compile(
    rb"\n(?:---(?=\n)|Index: [^\n]*\n====|From |(?i:base):(?![ \t]*//)(?=[^\n]*\n[^ \t])|"
    rb"(?i:" + _SPACE + rb"(?:" + _OWN_NAME + rb")" + _SPACE + rb":[^\n]*)(?:\n[ \t])?)"
)  # fmt: skip
_STOPS = (b"\n---", b"\nIndex: ")
_ACCEPTED = frozenset({"applies-to", "upstream-fixed-in", "smoke", "choose", "base"})


def quick_read(text: str, scheme: VersionScheme) -> HeadOnly | None:
    """The variant at TEXT (its path as text), read as the strict reading would read it
    without its diff, from its first bytes alone; None when they are not a head it can prove
    that of (see the module's docstring), or the file is not one to read so: no regular file
    within the size a patch file may have, or its diff does not start in its first HEAD bytes
    (then the loader reads it as before, and says why it cannot be read, if it cannot)."""
    if scheme is not PEP440:
        return None
    try:
        fd = os.open(text, _READ_FLAGS)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if info.st_size > MAX_PATCH_BYTES or not S_ISREG(info.st_mode):
            return None
        lined = b"\n" + os.read(fd, HEAD)  # a "\n" first: see _DIFF_LINE_RE
    except OSError:
        return None
    finally:
        os.close(fd)
    if (diff := _DIFF_LINE_RE.search(lined)) is None:
        return None
    head = lined[1 : diff.end()]  # as `headers.header_end` ends it
    if not head.isascii() or head.find(b"\r") >= 0:
        return None
    facts = _facts(tuple(_HEAD_LINE_RE.findall(lined, 0, diff.start() + 1)))
    if facts is None:
        return None
    made = object.__new__(HeadOnly)  # not PatchFile's __init__: HeadOnly's few fields
    state = made.__dict__
    state.update(facts)
    state["_text"], state["source"] = text, head
    return made


@functools.lru_cache(maxsize=4096)
def _facts(lines: tuple[bytes, ...]) -> dict[str, Any] | None:
    """What LINES, the lines of a head `_HEAD_LINE_RE` finds, say of its variant, as the
    fields of a `HeadOnly` (None: not a head `quick_read` accepts). Asked once per distinct
    LINES: a set's variants differ in a few (a range, a check)."""
    found: dict[str, Any] = {}
    stopped = False
    for line in lines:
        if line.startswith(b"\nFrom "):
            return None
        if line.startswith(_STOPS):
            stopped = True
            continue
        folded = b"\n" in line[1:]
        if stopped or folded or (own := _own_field(line[1:])) is None or own[0] in found:
            return None
        found[own[0]] = own[1]
    smoke, unchecked = found.get("smoke", ((), None))  # no Smoke: no check, no reason
    return {
        "applies_to": found.get("applies-to"), "upstream_fixed_in": found.get("upstream-fixed-in"),
        "smoke": smoke, "unchecked": unchecked, "by_content": "choose" in found,
    }  # fmt: skip


def _own_field(line: bytes) -> tuple[str, Any] | None:
    """LINE, written like one of our fields, as the strict reading reads it: the field's key
    and its value turned as it turns it (a range; a Smoke's checks and reason; whether
    `Choose` says by content), or None unless it is a field we accept, with nothing wrong."""
    name, _, rest = line.partition(b":")
    key = name.decode("ascii").lower()
    value = rest.decode("ascii").lstrip(" \t")
    if key not in _ACCEPTED or value.startswith("//"):  # `//`: read as text, not our field
        return None
    value = value.strip()
    if key == "smoke":
        names, unchecked, wrong = smoke_field(value)
        return None if wrong else (key, (names, unchecked))
    if key == "choose":
        return (key, True) if choice_field(value) == (True, None) else None
    if key == "base":  # `port` writes one in every variant; the strict reading takes any value
        return (key, None)
    spec = specifier_set(key, value)[0]
    return None if spec is None else (key, spec)


class HeadOnly(PatchFile):
    """A variant read by `quick_read`: its range, smoke and choice as the strict reading
    reads them, its diff not read (as any variant `check` has not chosen); its Path, fields,
    Header and warnings made by the strict reading of the same head when first asked."""

    # What the strict reading says of every head `quick_read` accepts (class attributes: a
    # variant made holds only its own few).
    diff = b""
    files = ()
    upstream_has = ()
    empty = False
    invalid = None

    @cached_property
    def path(self) -> Path:  # type: ignore[override]
        return Path(self.__dict__["_text"])

    @cached_property
    def _strict(self) -> PatchFile:
        """The strict reading of the same head (what every variant was before `quick_read`)."""
        parsed, problems = parse_data(self.path, self.source, False, PEP440, diff=False)
        if parsed is None or problems:  # quick_read accepts no such head: a bug, said so
            raise AssertionError(f"{self.path}: read quickly, but not by the strict reading")
        return parsed

    @cached_property
    def fields(self) -> dict[str, str]:  # type: ignore[override]
        return self._strict.fields

    @cached_property
    def header(self) -> Header:  # type: ignore[override]
        return self._strict.header

    @cached_property
    def warnings(self) -> tuple:  # type: ignore[override]
        return self._strict.warnings
