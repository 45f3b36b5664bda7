"""patchkeeper's own header fields as typed values: `Applies-To` and `Upstream-Fixed-In`
(written in the set's version scheme) as PEP 440 specifier sets, `Upstream-Has` as content
conditions. The engine acts on them, so they are strict: each wrong one is a Problem at its
line (the other fields are `headers`', and at most warn).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from patchkeeper.model.problems import Problem
from patchkeeper.patchset.userfiles import unsafe_file
from patchkeeper.patchset.variants import bounds
from patchkeeper.patchset.versions import PEP440, VersionScheme

if TYPE_CHECKING:  # loaded by the first Applies-To or Upstream-Fixed-In (specifier_set)
    from packaging.specifiers import SpecifierSet

    from patchkeeper.patchset.conditions import ContentCondition  # by the first Upstream-Has

_SCOPE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def field_line(lines: list[str], key: str) -> int:
    """The line number of field KEY in the header (its first line, for a folded field)."""
    return next((i + 1 for i, text in enumerate(lines) if text.lower().startswith(key + ":")), 1)


def parse_specifier(
    path: Path, fields: dict[str, str], key: str, lines: list[str]
) -> tuple[SpecifierSet | None, Problem | None]:
    if key not in fields:
        return None, None
    spec, why = specifier_set(key, fields[key])
    if spec is None:
        return None, Problem(path, field_line(lines, key), why)  # its line, only when wrong
    return spec, None


@functools.lru_cache(maxsize=4096)
def specifier_set(key: str, text: str) -> tuple[SpecifierSet | None, str]:
    """TEXT, field KEY, as a specifier set, or why it is none. Cached by its text: the fixes
    of a set share ranges (`>=0.21.3`), and a SpecifierSet is never changed once made."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        spec = SpecifierSet(text)
    except InvalidSpecifier:
        return None, f"invalid PEP 440 specifier set {_shown(text)}"
    if (bad := _uncomparable(spec)) is not None:
        return None, f"{key.title()} {_shown(bad)}: a version number too long to compare"
    if not len(spec):  # what str(spec) == "" says, without sorting and joining them
        return None, f"empty specifier set in {key}"
    if bounds(spec).empty:
        return None, f"{key.title()} {_shown(text)} admits no version"
    return spec, ""


def ranges_in_pep440(
    path: Path, fields: dict[str, str], lines: list[str], scheme: VersionScheme
) -> tuple[dict[str, str], list[Problem]]:
    """FIELDS with the version ranges, written in SCHEME, as PEP 440 specifiers (FIELDS
    itself in PEP 440, the default: nothing to convert)."""
    if scheme is PEP440:
        return fields, []
    converted, problems = dict(fields), []
    for key in ("applies-to", "upstream-fixed-in"):
        if key in fields:
            converted[key], why = scheme.specifiers(fields[key])
            if why is not None:
                converted.pop(key)
                problems.append(Problem(path, field_line(lines, key), f"{key.title()}: {why}"))
    return converted, problems


def _uncomparable(spec_set: SpecifierSet) -> str | None:
    """The specifier of SPEC_SET that no version can be compared with, or None.

    packaging parses a specifier's version only when it first compares one, and a number past
    Python's int-conversion limit (4300 digits) raises ValueError there: on every version, in
    every command, after an update moved HEAD as much as before. It is refused here instead.
    """
    for spec in spec_set:
        if spec.operator == "===":  # arbitrary equality compares strings, never numbers
            continue
        try:
            Version(spec.version.removesuffix(".*"))
        except (InvalidVersion, ValueError):
            return str(spec)
    return None


def _shown(text: str, limit: int = 60) -> str:
    """TEXT quoted for a one-line message, cut at LIMIT characters (with its length)."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def _condition(entry: str) -> tuple[ContentCondition | None, str | None]:
    """`PATH: TEXT` -> a condition, or why ENTRY is not one."""
    target, separator, text = entry.partition(": ")
    if not separator and entry.endswith(":"):
        target = entry[:-1]
    elif not separator:
        return None, f"Upstream-Has condition {entry!r} is not 'PATH: TEXT'"
    target, scoped, scope = target.partition("::")
    unsafe = unsafe_file(target)
    if unsafe:
        return None, f"Upstream-Has path {target!r}: {unsafe}"
    if scoped and not scope:
        return None, f"Upstream-Has scope after {target + '::'!r} is empty: name it, or drop '::'"
    if scope and not _SCOPE_RE.fullmatch(scope):
        return None, f"Upstream-Has scope {scope!r} is not a Python name (NAME or Class.method)"
    if not text.strip():
        return None, f"Upstream-Has condition for {target!r} has no text to look for"
    from patchkeeper.patchset.conditions import ContentCondition  # a set that names one

    return ContentCondition(target, text.strip(), scope), None


def parse_upstream_has(
    path: Path, fields: dict[str, str], lines: list[str]
) -> tuple[tuple[ContentCondition, ...], list[Problem]]:
    """The `Upstream-Has:` conditions, one per line (folded continuation lines)."""
    if "upstream-has" not in fields:
        return (), []
    first = field_line(lines, "upstream-has")
    conditions: list[ContentCondition] = []
    problems: list[Problem] = []
    # The header parser keeps one "\n"-separated entry per header line, in order.
    for offset, entry in enumerate(fields["upstream-has"].split("\n")):
        if not entry:
            continue  # `Upstream-Has:` alone on its line, conditions on the lines below
        condition, problem = _condition(entry)
        if problem:
            problems.append(Problem(path, first + offset, problem))
        elif condition:
            conditions.append(condition)
    if not conditions and not problems:
        problems.append(Problem(path, first, "Upstream-Has names no 'PATH: TEXT' condition"))
    return tuple(conditions), problems
