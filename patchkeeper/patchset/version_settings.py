"""`patchkeeper.toml`'s version settings, checked when the set is loaded: the chain of version
sources (`[[install.version_source]]`, or the shorthand `version_command` / `version_file` /
`version_pattern`) and the tag table (`[tags]`). A mistake is a one-line error naming the file
and the key, never a version that silently comes out unknown later."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from patchkeeper.model.errors import UserError
from patchkeeper.patchset.userfiles import unsafe_file
from patchkeeper.patchset.version_sources import (
    CommandSource,
    DescribeSource,
    JsonKeySource,
    TagNames,
    VersionSource,
)
from patchkeeper.patchset.versions import (
    DEFAULT_VERSION_PATTERN,
    VersionFile,
    VersionScheme,
    scheme_words,
)

SOURCE_KEY = "version_source"
_SHORTHAND = ("version_command", "version_file", "version_pattern")
_KINDS: dict[str, set[str]] = {  # the key that names a kind -> the keys it takes
    "json": {"json", "key", "distance_key", "commit_key"},
    "file": {"file", "pattern"},
    "command": {"command", "timeout"},
    "describe": {"describe", "match"},
}


def version_sources(
    path: Path, install: dict[str, Any], scheme: VersionScheme
) -> tuple[VersionSource, ...]:
    """The chain, in the order the set gives it. Without `version_source`: the shorthand keys
    (command, then file, then describe), or describe alone."""
    if SOURCE_KEY not in install:
        return _shorthand(path, install, scheme)
    if used := [key for key in _SHORTHAND if key in install]:
        raise UserError(
            f"{path}: install.{used[0]} and [[install.{SOURCE_KEY}]] both given: "
            f"say it as a {SOURCE_KEY} entry"
        )
    entries = install[SOURCE_KEY]
    if not isinstance(entries, list) or not entries:
        raise UserError(f"{path}: install.{SOURCE_KEY} must be one or more [[tables]]")
    return tuple(
        _source(path, f"install.{SOURCE_KEY}[{n}]", e, scheme) for n, e in enumerate(entries)
    )


def _shorthand(
    path: Path, install: dict[str, Any], scheme: VersionScheme
) -> tuple[VersionSource, ...]:
    sources: list[VersionSource] = []
    command = install.get("version_command", [])
    if command:
        sources.append(CommandSource(_argv(path, "install.version_command", command)))
    elif not isinstance(command, list):
        raise UserError(f"{path}: install.version_command must be a list of strings")
    for key in ("version_file", "version_pattern"):
        if key in install and not isinstance(install[key], str):
            raise UserError(f"{path}: install.{key} must be a string")
    if "version_file" in install:
        pattern = install.get("version_pattern", DEFAULT_VERSION_PATTERN)
        sources.append(_version_file(path, "install", install["version_file"], pattern, scheme))
    elif "version_pattern" in install:
        raise UserError(f"{path}: install.version_pattern needs install.version_file")
    return (*sources, DescribeSource())


def _source(path: Path, where: str, entry: Any, scheme: VersionScheme) -> VersionSource:
    if not isinstance(entry, dict):
        raise UserError(f"{path}: {where} must be a table")
    kinds = [kind for kind in _KINDS if kind in entry]
    if len(kinds) != 1:
        names = ", ".join(_KINDS)
        raise UserError(f"{path}: {where} needs exactly one of {names} (it has {len(kinds)})")
    kind = kinds[0]
    if unknown := sorted(set(entry) - _KINDS[kind]):
        raise UserError(f"{path}: unknown key {unknown[0]!r} in {where} ({kind} source)")
    for key, value in entry.items():
        if key not in ("command", "timeout", "describe") and not isinstance(value, str):
            raise UserError(f"{path}: {where}.{key} must be a string")
    if kind == "json":
        _safe(path, f"{where}.json", entry["json"])
        if "key" not in entry:
            raise UserError(f"{path}: {where} needs key (the JSON key that holds the version)")
        return JsonKeySource(
            entry["json"], entry["key"], entry.get("distance_key"), entry.get("commit_key"), scheme
        )
    if kind == "file":
        pattern = entry.get("pattern", DEFAULT_VERSION_PATTERN)
        return _version_file(path, where, entry["file"], pattern, scheme, key="file")
    if kind == "command":
        timeout = entry.get("timeout", 30.0)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise UserError(f"{path}: {where}.timeout must be a positive number of seconds")
        if not 0 < timeout < math.inf:
            raise UserError(f"{path}: {where}.timeout must be a positive number of seconds")
        return CommandSource(_argv(path, f"{where}.command", entry["command"]), float(timeout))
    if entry["describe"] is not True:
        raise UserError(f"{path}: {where}.describe must be true (leave the entry out instead)")
    return DescribeSource(entry.get("match"))


def _argv(path: Path, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise UserError(f"{path}: {key} must be a non-empty list of strings")
    return tuple(value)


def _safe(path: Path, key: str, target: str) -> None:
    if unsafe := unsafe_file(target):
        raise UserError(f"{path}: {key} {target!r}: {unsafe}")


def _version_file(
    path: Path,
    where: str,
    target: str,
    pattern_text: str,
    scheme: VersionScheme,
    key: str = "version_file",
) -> VersionFile:
    _safe(path, f"{where}.{key}", target)
    pattern_key = "pattern" if key == "file" else "version_pattern"
    try:
        pattern = re.compile(pattern_text, re.MULTILINE)
    except re.error as exc:
        raise UserError(f"{path}: {where}.{pattern_key} is not a valid regex: {exc}") from None
    if pattern.groups != 1 and "version" not in pattern.groupindex:
        raise UserError(
            f"{path}: {where}.{pattern_key} needs exactly one capture group, or one named "
            f"'version' (it has {pattern.groups})"
        )
    return VersionFile(target, pattern, scheme)


def tag_names(path: Path, data: dict[str, Any], scheme: VersionScheme) -> TagNames:
    """`[tags]`: tag name -> the release it is. No table: a tag's name is its version."""
    if "tags" not in data:
        return TagNames(None, scheme)
    table: dict[str, Any] = data["tags"]
    releases = {}
    for tag, release in table.items():
        if isinstance(release, dict):  # v2026.9.24 = ... unquoted: TOML reads dotted keys
            raise UserError(f'{path}: tags.{tag}: quote the tag name ("{tag}.…" = "0.21.5")')
        version = scheme.parse(release) if isinstance(release, str) else None
        if version is None:
            words = scheme_words(scheme)
            raise UserError(
                f"{path}: tags.{tag!r} must be a {words} version string, not {release!r}"
            )
        releases[tag] = version
    return TagNames(releases, scheme)
