"""Where a patch set reads an upstream's version: the ordered chain of version sources in
`patchkeeper.toml` (`[[install.version_source]]`, or the shorthand keys `version_command` and
`version_file`), and which release each tag is (`[tags]`). What each source makes of the bytes
it is given lives here; reading files, blobs and commands is install/checkout/version_chain.py's
job.

Kinds, each a table with one of these keys:
- `json = "install-stamp.json"`, `key = "baseVersion"`: a key of a JSON object in a file;
  `distance_key` and `commit_key` compose `<base>+<distance>.g<sha7>` as Hermes' own
  `hermes --version` does, and with `commit_key` a stamp written for another commit is stale.
- `file = "hermes_cli/__init__.py"`, `pattern = '...'`: a regex over a file (VersionFile).
- `command = ["python", "-c", "..."]`: the upstream's own version logic; it prints the version.
- `describe = true`: `git describe` of the commit, tags read through `[tags]`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.version import Version

from patchkeeper.patchset.version_keys import with_local
from patchkeeper.patchset.versions import (
    PEP440,
    VersionFile,
    VersionInfo,
    VersionScheme,
    describe_parts,
    scheme_words,
    tag_to_version,
)

_SHA_RE = re.compile(r"^[0-9a-f]{4,64}$")


@dataclass(frozen=True)
class JsonKeySource:
    """A version kept under KEY in a JSON object in the file PATH (an install stamp)."""

    path: str
    key: str
    distance_key: str | None = None
    commit_key: str | None = None
    scheme: VersionScheme = PEP440

    @property
    def name(self) -> str:
        return self.path

    def read(self, content: bytes, commit: str | None) -> VersionInfo:
        """The version CONTENT states for COMMIT (the commit it must describe, when known)."""
        import json  # only for a json source: a text `check` without one never loads it

        try:
            data = json.loads(content.decode("utf-8-sig"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return self._none("not valid JSON")
        if not isinstance(data, dict):
            return self._none("not a JSON object")
        base = data.get(self.key)
        if not isinstance(base, str):
            why = f"no {self.key!r} key" if base is None else f"{self.key!r} is not a string"
            return self._none(why)
        stamped = data.get(self.commit_key) if self.commit_key else None
        if self.commit_key and (stale := _stale(self.commit_key, stamped, commit)):
            return self._none(stale)
        version = self.scheme.parse(base)
        if version is None:
            return self._none(f"{self.key} {base!r} is not a {scheme_words(self.scheme)} version")
        said = [f"{self.key} {base}"]
        distance = _count(data.get(self.distance_key)) if self.distance_key else None
        if distance and not version.local:
            sha = stamped[:7].lower() if isinstance(stamped, str) else None
            local = f"{distance}.g{sha}" if sha else str(distance)
            version = with_local(version, local) or version
            said.append(f"{self.distance_key} {distance}")
        if isinstance(stamped, str):
            said.append(f"{self.commit_key} {stamped[:12]}")
        return VersionInfo(version, f"{self.path}: {', '.join(said)}", "json")

    def _none(self, why: str) -> VersionInfo:
        return VersionInfo(None, f"{self.path}: {why}", "unknown")


def _count(value: object) -> int | None:
    """A commit count as a stamp may hold it: an int, or digits in a string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.isascii() and value.isdigit():  # not "²"
        try:
            return int(value)
        except ValueError:  # past Python's int-conversion limit (4300 digits): no count
            return None
    return None


def _stale(key: str, stamped: object, commit: str | None) -> str | None:
    """Why a stamp whose KEY names STAMPED is not one for COMMIT (None: it is, or no COMMIT
    to compare). A stamp that names no commit id is not taken either: Hermes' own reader
    passes over a stamp without `commit` (it cannot tell which checkout it describes)."""
    if stamped is None:
        return f"no {key!r} key (cannot tell which commit it was written for)"
    if not isinstance(stamped, str) or not _SHA_RE.match(stamped.lower()):
        shown = repr(stamped)[:40]
        return f"{key} {shown} is not a commit id (cannot tell which commit it was written for)"
    stamped = stamped.lower()
    if set(stamped) == {"0"}:
        return f"a placeholder stamp (commit {stamped[:12]})"
    if commit and not commit.startswith(stamped) and not stamped.startswith(commit):
        return f"stamped for commit {stamped[:12]}, not {commit[:12]} (stale)"
    return None


@dataclass(frozen=True)
class CommandSource:
    """The upstream's own version logic, run in the work tree; it prints the version."""

    argv: tuple[str, ...]
    timeout: float = 30.0

    @property
    def name(self) -> str:
        return "version command"


@dataclass(frozen=True)
class DescribeSource:
    """`git describe` of the commit; MATCH: the tags it may name (a glob), else the release
    tags (`v[0-9]*`, or the tags `[tags]` lists)."""

    match: str | None = None

    @property
    def name(self) -> str:
        return "git describe"


@dataclass(frozen=True)
class TagNames:
    """Which release each tag is. TABLE (`[tags]`, tag -> version) set: only the tags it lists
    name a release, any other tag's release is unknown (a CalVer tag like `v2026.9.24` names
    no release number, and read as a number it would sort above 0.22). Not set: a tag's
    name, less its `v`, is its version."""

    table: dict[str, Version] | None = None
    scheme: VersionScheme = PEP440

    def version(self, tag: str) -> Version | None:
        if self.table is not None:
            return self.table.get(tag)
        return tag_to_version(tag, self.scheme)

    def unknown_reason(self, tag: str) -> str:
        if self.table is not None:
            return f"{tag}: a tag [tags] does not list (its release is unknown)"
        return f"{tag}: not a {scheme_words(self.scheme)} version"

    def describe_matches(self, source: DescribeSource) -> list[str]:
        """`git describe --match` arguments: the source's glob, else the listed tags (glob
        characters in a name escaped), else the release tags."""
        if source.match is not None:
            return ["--match", source.match]
        if self.table is not None:
            return [arg for tag in self.table for arg in ("--match", _glob_escape(tag))]
        return ["--match", "v[0-9]*"]

    def described(self, described: str) -> Version | None:
        """`git describe` output as a version: the tag's release, plus distance and sha."""
        parts = describe_parts(described)
        if parts is None:
            return None
        tag, distance, sha = parts
        base = self.version(tag)
        if base is None or not distance or distance == "0" or sha is None:
            return base
        return with_local(base, f"{distance}.g{sha[:7]}")


def _glob_escape(name: str) -> str:
    return re.sub(r"([*?\[\\])", r"\\\1", name)


VersionSource = JsonKeySource | VersionFile | CommandSource | DescribeSource


NAMES_ARE_VERSIONS = TagNames()  # no [tags]: a tag's name is its version
