"""Debian and SemVer versions ordered exactly as the libraries that define them, as PEP 440 keys.

`Applies-To` ranges are packaging's `SpecifierSet`s, which order PEP 440 versions. A Debian
or SemVer version mapped onto PEP 440 by its look (`~rc1` as rc1, `-alpha` as a0) sorts
wrong where the schemes differ (issue 27: against dpkg `1.6.43+dfsg-3 < 1.6.43-2`,
`1.0a == 1.0~a`, and `0.9.8za` did not parse; against SemVer 24 of 91 pairs). So each version
is read by the library that defines its scheme (python-debian's `Version`, python-semver's
`Version`: the text is valid when they say so) and given a PEP 440 release tuple that sorts
exactly as they do, shown as it was written (`SchemeVersion`):

- Debian (dpkg's `verrevcmp`): the upstream version and then the revision, each as its runs
  of non-digits and digits; a non-digit run is its characters' weights (`~` below the end of
  the run, below letters, below everything else) closed by the end mark, a digit run its
  number; each part closed by the end mark. An epoch is PEP 440's epoch. A revision of only
  zeros is no revision (`1.0-0 == 1.0`, as dpkg says).
- SemVer 2.0 precedence: major, minor, patch, then 2 for a release or 1 and the pre-release
  identifiers (a numeric one as 1 and its number, an alphanumeric one as 2, its ASCII codes
  and an end mark 0): numeric below alphanumeric, fewer identifiers first. Build metadata is
  left out: `1.0.0+build.1` has the precedence of `1.0.0`.

The end marks make every key end in a number above 0, so PEP 440's padding of a shorter
release with zeros (and its dropping of trailing zeros) never makes two keys equal or
reorders them. `tests/test_version_scheme.py` holds the tables of real version pairs, and
compares every pair of a few hundred versions with the libraries.
"""

from __future__ import annotations

import re

from packaging.version import Version

_END = 2  # the end of a Debian run or part; `~` is 1, letters and others above
_RUNS_RE = re.compile(r"(\D*)(\d*)")


class SchemeVersion(Version):
    """A version of a scheme other than PEP 440: compares by its PEP 440 key, reads as the
    project wrote it."""

    __slots__ = ("_text",)

    def __init__(self, key: str, text: str) -> None:
        super().__init__(key)
        self._text = text

    def __str__(self) -> str:
        return self._text

    @property
    def key(self) -> str:
        """The PEP 440 text that orders this version (what a specifier set is built from)."""
        return Version.__str__(self)


def _weight(char: str) -> int:
    if char == "~":
        return 1
    if char.isascii() and char.isalpha():
        return ord(char) + _END
    return ord(char) + 256 + _END


def _dpkg_runs(text: str) -> list[int]:
    """TEXT (an upstream version or a revision) as numbers ordered as dpkg orders it."""
    key: list[int] = []
    for letters, digits in _RUNS_RE.findall(text):
        if not letters and not digits:
            continue
        key += [_weight(char) for char in letters]
        key += [_END, int(digits or 0)]
    return [*key, _END]


def debian_version(text: str) -> SchemeVersion | None:
    """TEXT as a Debian version (python-debian reads it, its upstream part starts with a
    digit, as dpkg requires), or None."""
    from debian.debian_support import Version as DebianVersion

    try:
        parsed = DebianVersion(text)
    except ValueError:
        return None
    upstream = parsed.upstream_version or ""
    if not upstream[:1].isdigit():
        return None
    revision = parsed.debian_revision or ""
    if revision.isdigit() and int(revision) == 0:
        revision = ""
    key = _dpkg_runs(upstream) + _dpkg_runs(revision)
    return SchemeVersion(f"{parsed.epoch or 0}!{'.'.join(map(str, key))}", text)


def semver_version(text: str) -> SchemeVersion | None:
    """TEXT as a SemVer 2.0 version (python-semver reads it; `1.2` is 1.2.0), or None."""
    import semver

    try:
        parsed = semver.Version.parse(text, optional_minor_and_patch=True)
    except (ValueError, TypeError):
        return None
    key = [parsed.major, parsed.minor, parsed.patch]
    if parsed.prerelease is None:
        key.append(2)
    else:
        key.append(1)
        for part in parsed.prerelease.split("."):
            if part.isdigit():
                key += [1, int(part)]
            else:
                key += [2, *(ord(char) + 1 for char in part), 0]
    return SchemeVersion(".".join(map(str, key)), text)


def with_local(base: Version, local: str) -> Version | None:
    """BASE with a PEP 440 local part LOCAL (`3.gabcdef1`: `git describe`'s distance and sha):
    after BASE, before anything above it; None when LOCAL is no local version."""
    if isinstance(base, SchemeVersion):
        try:
            return SchemeVersion(f"{base.key}+{local}", f"{base}+{local}")
        except ValueError:
            return None
    try:
        return Version(f"{base.public}+{local}")
    except ValueError:
        return None
