"""One patch file -> a `PatchFile`, or the problems that keep it from being one: its header
(`headers`), our own fields in it (`fields`), its diff (`diff`). A variant not chosen yet is
read without its diff (see `Patch.complete`).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from patchkeeper.model.problems import Problem
from patchkeeper.patchset.diff import read_diff
from patchkeeper.patchset.fields import (
    field_line,
    parse_specifier,
    parse_upstream_has,
    ranges_in_pep440,
)
from patchkeeper.patchset.headers import empty_patch, looks_like_diff, parse_header
from patchkeeper.patchset.model import BY_CONTENT_FIELD, PatchFile
from patchkeeper.patchset.userfiles import SMOKE_NAME_RE, read_user_file, utf8_text
from patchkeeper.patchset.versions import PEP440, VersionScheme

# Files of a patch set are read whole; a FIFO would block and /dev/zero never end, so only
# regular files (or links to them) are read, and only up to a size no real patch comes near.
MAX_PATCH_BYTES = 16 << 20


def parse_patch_file(
    path: Path, *, outside_links: bool = False, scheme: VersionScheme = PEP440
) -> tuple[PatchFile | None, list[Problem]]:
    """One patch file. OUTSIDE_LINKS: the patch set allows symlinks that point out of the
    install (`[patches] allow_outside_symlinks`); otherwise a patch that writes one is refused.
    SCHEME: how `Applies-To` and `Upstream-Fixed-In` write versions (`[install]
    version_scheme`)."""
    data, unreadable = read_user_file(path, MAX_PATCH_BYTES)
    if unreadable:
        return None, [Problem(path, 1, unreadable)]
    return parse_data(path, data, outside_links, scheme)


def parse_data(
    path: Path, data: bytes, outside_links: bool, scheme: VersionScheme, *, diff: bool = True
) -> tuple[PatchFile | None, list[Problem]]:
    """`parse_patch_file` of DATA, PATH's bytes. Without DIFF, everything but the diff is read
    (its diff and files left empty: a variant not chosen yet, see `Patch.complete`)."""
    text, not_utf8 = utf8_text(path, data)
    # Split on "\n" only: a diff's bytes (CRLF lines, form feeds) must survive as written,
    # a byte that is not UTF-8 too (git and GNU patch apply it as it is); the header is read
    # with such a byte shown as U+FFFD.
    if not_utf8:
        raw_lines = data.decode("utf-8", errors="surrogateescape").split("\n")
        shown = data.decode("utf-8", errors="replace").split("\n")
    else:  # surrogateescape reads UTF-8 as the strict decoder does: one decode serves both
        raw_lines = shown = text.split("\n")
    lines = [line.removesuffix("\r") for line in shown] if "\r" in text or not_utf8 else shown
    header = parse_header(path, lines)
    fields, diff_start, problems = header.fields, header.diff_start, list(header.problems)
    warnings = list(header.warnings)
    if not_utf8:
        read_as = f"{not_utf8.message}: its bytes are kept as they are"
        warnings.append(Problem(path, not_utf8.line, read_as))
    if (header.fields or header.free_text) and not (
        fields.get("description") or fields.get("subject")
    ):
        warnings.append(Problem(path, 1, "the header has no Description (or Subject)"))
    empty = diff_start >= len(lines) and not looks_like_diff(lines)
    if empty and not empty_patch(header, lines):
        return None, [*problems, _truncated(path, lines)]
    if empty:
        warnings.append(Problem(path, 1, "no diff: an empty patch, applied as empty"))
        diff_bytes, files = b"", []
    elif diff_start >= len(lines):
        problems.append(
            Problem(
                path,
                len(lines) or 1,
                "no diff found (a 'diff --git' section, or '--- a/FILE', '+++ b/FILE' and a hunk)",
            )
        )
        return None, problems
    elif not diff:
        diff_bytes, files = b"", []
    else:
        read, files, diff_problems = read_diff(path, data, raw_lines, diff_start, outside_links)
        if read is None:
            return None, problems + diff_problems
        diff_bytes = read
        problems += diff_problems
    in_pep440, scheme_problems = ranges_in_pep440(path, fields, lines, scheme)
    problems += scheme_problems
    applies_to, p1 = parse_specifier(path, in_pep440, "applies-to", lines)
    fixed_in, p2 = parse_specifier(path, in_pep440, "upstream-fixed-in", lines)
    if p1 or p2:
        problems += [p for p in (p1, p2) if p]
    upstream_has, has_problems = parse_upstream_has(path, fields, lines)
    smoke, unchecked, smoke_why = smoke_field(fields.get("smoke", ""))
    by_content, choose_why = choice_field(fields.get("choose"))
    if has_problems or smoke_why or choose_why:
        problems += has_problems
        problems += [Problem(path, field_line(lines, "smoke"), why) for why in smoke_why]
        if choose_why:
            problems.append(Problem(path, field_line(lines, "choose"), choose_why))
    if problems:
        return None, problems
    return PatchFile(
        path=path,
        fields=fields,
        diff=diff_bytes,
        files=tuple(files),
        applies_to=applies_to,
        upstream_fixed_in=fixed_in,
        smoke=smoke,
        source=data,
        upstream_has=upstream_has,
        header=header,
        warnings=tuple(warnings),
        empty=empty,
        unchecked=unchecked,
        by_content=by_content,
    ), []


# `none` alone, or followed by its reason: never a check name that starts with it
# (`none-yet`, `none.py`) nor a list (`none, proof`), whose checks must run.
_NONE_RE = re.compile(r"^none(?=$|[\s:(])[\s:(-]*(.*?)\)?\s*$", re.IGNORECASE)


@functools.lru_cache(maxsize=256)
def smoke_field(text: str) -> tuple[tuple[str, ...], str | None, tuple[str, ...]]:
    """`Smoke:` (its value TEXT) as check names, or `Smoke: none (WHY)`: a fix no check can
    prove, said on purpose (its reason is required, and reported), so a fix without a check
    is never a quiet green. Last: what is wrong with it, if anything (each a problem at the
    field's line). Read once per value: a set's variants share a few."""
    value = text.strip()
    if (match := _NONE_RE.match(value)) is None:
        names = tuple(s.strip() for s in value.split(",") if s.strip())
        wrong = tuple(
            f"Smoke {name!r} is not a check name (a file in smoke/, without a path)"
            for name in names
            if not SMOKE_NAME_RE.fullmatch(name.removesuffix(".py"))
        )
        return names, None, wrong
    if not match.group(1).strip():
        why = "Smoke: none needs its reason: `Smoke: none (why no check can prove it)`"
        return (), None, (why,)
    return (), match.group(1).strip(), ()


def choice_field(value: str | None) -> tuple[bool, str | None]:
    """Whether the variant is chosen by content (`Choose: by-content`, its VALUE), the only
    value; and what is wrong with VALUE if anything."""
    if value is None:
        return False, None
    if value.strip().lower() == "by-content":
        return True, None
    why = f"Choose {value.strip()!r}: the only choice is 'by-content' (write '{BY_CONTENT_FIELD}')"
    return False, why


def _truncated(path: Path, lines: list[str]) -> Problem:
    """A file with a header that says a diff was meant, and none: cut short, not empty (as an
    empty patch it would count as already applied, its smoke check never run)."""
    last = max((i + 1 for i, line in enumerate(lines) if line.strip()), default=1)
    return Problem(path, last, "no diff after its header: truncated?")
