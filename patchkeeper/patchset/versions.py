"""How upstream versions are written and compared: PEP 440 and the other schemes a patch set
can name (`[install] version_scheme`), version tags and `git describe` output read as versions,
the version file setting, and `VersionInfo` (a version with where it came from). Reading a
version from an install is the install's job (install/checkout/version_probes.py); this module runs
nothing.

`v0.21.5-3698-g6f7a799` -> `0.21.5+3698.g6f7a799` (Hermes' own format, a PEP 440 local
version); `v2026.6.19` -> `2026.6.19`; canary tags `v0.22.0-canary.20261001120000` ->
`0.22.0.dev20261001120000` (a dev release sorts before its final release, as a canary does).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from packaging.version import InvalidVersion, Version

from patchkeeper.patchset.bounded_regex import SEARCH_SECONDS, RegexTimeout, search_within
from patchkeeper.patchset.version_keys import (
    SchemeVersion,
    debian_version,
    semver_version,
)

_DESCRIBE_RE = re.compile(r"^(?P<tag>.+?)(?:-(?P<distance>\d+)-g(?P<sha>[0-9a-f]{4,40}))?$")
_CANARY_RE = re.compile(r"^(?P<base>\d+(?:\.\d+)*)-canary\.(?P<stamp>\d+)$")
DEFAULT_VERSION_PATTERN = r"""__version__\s*=\s*["']([^"']+)["']"""


class VersionScheme:
    """How a project writes its versions, mapped onto PEP 440 so that they sort and so that
    `Applies-To` ranges hold them: `[install] version_scheme` in patchkeeper.toml.

    - `pep440` (the default): PEP 440 as it is.
    - `semver`: SemVer 2.0 precedence, exactly as python-semver orders it (`1.2` is 1.2.0;
      `+build` is ignored, as SemVer says).
    - `debian`: Debian versions (and OpenSSH's `9.2p1`), exactly as dpkg orders them
      (python-debian reads them): an epoch `1:`, `~` before anything, a revision `-3`.

    The two are ordered through a PEP 440 key (version_keys.py), so ranges stay packaging's
    specifier sets; a version reads as it was written.
    """

    def __init__(
        self, name: str, parse: Callable[[str], Version | None], *, own_order: bool = False
    ) -> None:
        self.name = name
        self._parse = parse
        self.own_order = own_order  # its versions sort by their own rules, never as PEP 440

    def __repr__(self) -> str:
        return f"VersionScheme({self.name!r})"

    def parse(self, text: str) -> Version | None:
        text = text.strip()
        if self.own_order:  # a PEP 440 reading would sort apart from the scheme's own
            return self._own(text)
        version = parse_version(text)
        return version if version is not None else self._own(text)

    def _own(self, text: str) -> Version | None:
        """The scheme's reading of TEXT; a number past Python's int-conversion limit (4300
        digits) is no version, as in `parse_version`."""
        try:
            return self._parse(text)
        except ValueError:
            return None

    def specifiers(self, text: str) -> tuple[str, str | None]:
        """An `Applies-To` text in this scheme -> (the PEP 440 specifier text, why not)."""
        if self is PEP440:
            return text, None
        parts = []
        for part in text.split(","):
            match = _SPECIFIER_RE.match(part)
            if match is None:
                return text, f"{part.strip()!r} is not an operator and a version"
            operator, version = match[1], match[2]
            if self.own_order and (version.endswith(".*") or operator in ("~=", "===")):
                why = f"{part.strip()!r}: wildcards, ~= and === are PEP 440's; write a range"
                return text, f"{why} (>=, <) of {self.name} versions"
            if version.endswith(".*"):
                parts.append(f"{operator}{version}")
                continue
            parsed = self.parse(version)
            if parsed is None:
                return text, f"{version!r} is not a {self.name} version"
            key = parsed.key if isinstance(parsed, SchemeVersion) else str(parsed)
            parts.append(f"{operator}{key}")
        return ",".join(parts), None


_SPECIFIER_RE = re.compile(r"^\s*(===|~=|==|!=|<=|>=|<|>)\s*(\S+)\s*$")
PEP440 = VersionScheme("pep440", lambda _text: None)
SCHEMES = {
    scheme.name: scheme
    for scheme in (
        PEP440,
        VersionScheme("semver", semver_version, own_order=True),
        VersionScheme("debian", debian_version, own_order=True),
    )
}


@dataclass(frozen=True)
class VersionInfo:
    """A version as read from an install or a ref, and where it was read. TEXT: why the
    sources tried first gave none (TRIED), then what the one that answered read (ANSWERED)."""

    version: Version | None
    text: str  # what was read, for the report, after why earlier sources gave none
    source: str  # "json", "file", "command", "describe" or "unknown"
    tried: tuple[str, ...] = ()  # why each source that did not answer gave no version
    answered: str | None = None  # the source that answered, and what it read

    def __str__(self) -> str:
        return str(self.version) if self.version else f"unknown ({self.text})"

    def said(self) -> str:
        """The version and where it came from, for a person: the source that answered, and
        why each one asked before it gave none."""
        if self.version is None:
            return str(self)
        before = f"; not from {'; '.join(self.tried)}" if self.tried else ""
        return f"{self.version} (from {self.answered or self.text}{before})"

    @property
    def read_from(self) -> str | None:
        """The source that answered and what it read; None when none did."""
        return (self.answered or self.text) if self.version else None

    @property
    def not_from(self) -> list[str]:
        """Why each source that did not answer gave no version."""
        return list(self.tried or (() if self.version else (self.text,)))

    def as_json(self) -> dict[str, object]:
        """The keys every JSON document that carries this version has."""
        return {
            "version": str(self.version) if self.version else None,
            "version_source": self.source,
            "version_from": self.read_from,
            "version_not_from": self.not_from,
        }


@dataclass(frozen=True)
class VersionFile:
    """`[install] version_file`: a file of the upstream's source that states its version.

    PATTERN has one capture group, or a group named `version`, around the version text.
    """

    path: str
    pattern: re.Pattern[str]
    scheme: VersionScheme = PEP440

    @property
    def name(self) -> str:
        return self.path

    def read(self, content: bytes, _commit: str | None = None) -> VersionInfo:
        """The version CONTENT states, or (source "unknown") why it states none. The search
        is bounded in time (bounded_regex): a pattern that backtracks without end is a
        reason here, never a hang."""
        try:
            match = search_within(self.pattern, content.decode(errors="replace"))
        except RegexTimeout:
            why = f"version_pattern {self.pattern.pattern!r} ran past {SEARCH_SECONDS:g} s"
            return VersionInfo(None, f"{self.path}: {why}", "unknown")
        group = "version" if "version" in self.pattern.groupindex else 1
        text = match[group] if match else None
        if text is None:
            if self.pattern.pattern == DEFAULT_VERSION_PATTERN:
                reason = "no __version__ literal"
            else:
                reason = f"no match for version_pattern {self.pattern.pattern!r}"
            return VersionInfo(None, f"{self.path}: {reason}", "unknown")
        if (version := self.scheme.parse(text)) is not None:
            return VersionInfo(version, f"{self.path}: {text}", "file")
        why = f"{text!r} is not a {scheme_words(self.scheme)} version"
        return VersionInfo(None, f"{self.path}: {why}", "unknown")


def parse_version(text: str) -> Version | None:
    """TEXT as a PEP 440 version, or None. A number past Python's int-conversion limit (4300
    digits) is no version either: packaging raises ValueError on it, and an upstream that
    states one after an update moved HEAD must not stop every later command."""
    try:
        return Version(text)
    except (InvalidVersion, ValueError):
        return None


def fallen_back(info: VersionInfo, reasons: list[str]) -> VersionInfo:
    """INFO, its text first saying why the sources tried before it gave no version; TRIED
    lists every source that gave none, ANSWERED names the one that gave it."""
    if info.version is None:
        tried = (*reasons, *(info.tried or (info.text,)))
        return replace(info, text="; ".join(tried), tried=tried, answered=None)
    answered = info.answered or info.text
    text = "; ".join([*reasons, answered])
    return replace(info, text=text, tried=(*reasons, *info.tried), answered=answered)


def scheme_words(scheme: VersionScheme) -> str:
    return "PEP 440" if scheme is PEP440 else scheme.name


def tag_to_version(tag: str, scheme: VersionScheme = PEP440) -> Version | None:
    tag = tag.removeprefix("v")
    if scheme is PEP440 and (canary := _CANARY_RE.match(tag)):
        tag = f"{canary['base']}.dev{canary['stamp']}"
    return scheme.parse(tag)


def describe_parts(described: str) -> tuple[str, str | None, str | None] | None:
    """`git describe` output -> (tag, distance, sha), the last two None on the tag itself."""
    match = _DESCRIBE_RE.match(described.strip())
    if not match:
        return None
    return match["tag"], match["distance"], match["sha"]
