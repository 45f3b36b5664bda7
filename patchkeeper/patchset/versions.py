"""How upstream versions are written and compared: PEP 440 and the other schemes a patch set
can name (`[install] version_scheme`), version tags and `git describe` output read as versions,
the version file setting, and `VersionInfo` (a version with where it came from). Reading a
version from an install is the install's job (install/version.py); this module runs nothing.

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

_DESCRIBE_RE = re.compile(r"^(?P<tag>.+?)(?:-(?P<distance>\d+)-g(?P<sha>[0-9a-f]{4,40}))?$")
_CANARY_RE = re.compile(r"^(?P<base>\d+(?:\.\d+)*)-canary\.(?P<stamp>\d+)$")
DEFAULT_VERSION_PATTERN = r"""__version__\s*=\s*["']([^"']+)["']"""


class VersionScheme:
    """How a project writes its versions, mapped onto PEP 440 so that they sort and so that
    `Applies-To` ranges hold them: `[install] version_scheme` in patchkeeper.toml.

    - `pep440` (the default): PEP 440 as it is.
    - `semver`: SemVer 2.0 (`1.2.3-rc.1` -> 1.2.3rc1, `-beta.2` -> b2, `-alpha` -> a0, any
      other pre-release `-canary.7` -> .dev7; `+build` is ignored, as SemVer says).
    - `debian`: Debian and OpenSSH style upstream versions: an epoch `1:`, `9.2p1` (a
      portable release after 9.2: 9.2.post1), `2.41~rc1` (before 2.41: 2.41rc1), `+dfsg`
      and a Debian revision `-3` as a local version (1.6.43+dfsg.3).

    Every scheme reads plain PEP 440 too, so `1.2` or `2026.6.19` mean what they say.
    """

    def __init__(self, name: str, parse: Callable[[str], Version | None]) -> None:
        self.name = name
        self._parse = parse

    def __repr__(self) -> str:
        return f"VersionScheme({self.name!r})"

    def parse(self, text: str) -> Version | None:
        text = text.strip()
        version = parse_version(text)
        return version if version is not None else self._parse(text)

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
            if version.endswith(".*"):
                parts.append(f"{operator}{version}")
                continue
            parsed = self.parse(version)
            if parsed is None:
                return text, f"{version!r} is not a {self.name} version"
            parts.append(f"{operator}{parsed}")
        return ",".join(parts), None


_SPECIFIER_RE = re.compile(r"^\s*(===|~=|==|!=|<=|>=|<|>)\s*(\S+)\s*$")
_SEMVER_RE = re.compile(
    r"^(?P<release>\d+\.\d+\.\d+)(?:-(?P<pre>[0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$"
)
_PRE = {"alpha": "a", "a": "a", "beta": "b", "b": "b", "rc": "rc", "pre": "rc"}
_DEBIAN_RE = re.compile(
    r"^(?:(?P<epoch>\d+):)?(?P<release>\d+(?:\.\d+)*)(?:p(?P<post>\d+))?"
    r"(?:~(?P<pre>[A-Za-z]+)\.?(?P<pre_n>\d*))?(?:\+(?P<local>[A-Za-z0-9.+]+))?"
    r"(?:-(?P<revision>[A-Za-z0-9.+~]+))?$"
)


def _semver(text: str) -> Version | None:
    match = _SEMVER_RE.match(text)
    if match is None:
        return None
    pre = ""
    if match["pre"]:
        words = match["pre"].split(".")
        number = next((w for w in words[1:] if w.isdigit()), "0")
        if words[0].isdigit():
            pre = f".dev{words[0]}"
        elif (label := _PRE.get(words[0].lower())) is not None:
            pre = f"{label}{number}"
        else:
            digits = re.sub(r"\D", "", words[0])
            pre = f".dev{number if number != '0' else digits or 0}"
    return parse_version(f"{match['release']}{pre}")


def _debian(text: str) -> Version | None:
    match = _DEBIAN_RE.match(text)
    if match is None:
        return None
    epoch = f"{match['epoch']}!" if match["epoch"] else ""
    post = f".post{match['post']}" if match["post"] else ""
    pre = ""
    if match["pre"]:
        label = _PRE.get(match["pre"].lower())
        pre = f"{label}{match['pre_n'] or 0}" if label else f".dev{match['pre_n'] or 0}"
    local = [p for p in (match["local"], match["revision"]) if p]
    tail = "+" + ".".join(re.sub(r"[^A-Za-z0-9.]", ".", p) for p in local) if local else ""
    return parse_version(f"{epoch}{match['release']}{pre}{post}{tail}")


PEP440 = VersionScheme("pep440", lambda _text: None)
SCHEMES = {
    scheme.name: scheme
    for scheme in (PEP440, VersionScheme("semver", _semver), VersionScheme("debian", _debian))
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
    if canary := _CANARY_RE.match(tag):
        tag = f"{canary['base']}.dev{canary['stamp']}"
    return scheme.parse(tag)


def describe_parts(described: str) -> tuple[str, str | None, str | None] | None:
    """`git describe` output -> (tag, distance, sha), the last two None on the tag itself."""
    match = _DESCRIBE_RE.match(described.strip())
    if not match:
        return None
    return match["tag"], match["distance"], match["sha"]


def describe_to_version(described: str, scheme: VersionScheme = PEP440) -> Version | None:
    parts = describe_parts(described)
    if parts is None:
        return None
    tag, distance, sha = parts
    base = tag_to_version(tag, scheme)
    if base is None or not distance or distance == "0" or sha is None:
        return base
    return parse_version(f"{base.public}+{distance}.g{sha[:7]}")
