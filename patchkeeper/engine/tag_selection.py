"""The tags `check --tags` and `--since` choose, in release order: loaded only when a check
names tags, not for one of a ref.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from patchkeeper.install.plumbing import git
from patchkeeper.patchset.version_sources import NAMES_ARE_VERSIONS, TagNames


@dataclass(frozen=True)
class TagSelection:
    """The tags `--tags`/`--since` chose, in release order, and those matching the globs whose
    release is unknown (left out by --since: never sorted by a CalVer name)."""

    tags: list[str]
    unknown: list[str]


def select_tags(
    repo: Path, globs: Sequence[str], since: Version | None, names: TagNames = NAMES_ARE_VERSIONS
) -> TagSelection:
    """The tags matching any of GLOBS (fnmatch: `*` matches any text, `/` included; no
    globs: every tag) that name a commit, keeping with SINCE only those whose release (NAMES:
    `[tags]`, else the name) is >= SINCE. Ordered by release (tags of unknown release last,
    by name)."""
    listing = git.out(
        ["for-each-ref", "--format=%(objecttype) %(*objecttype) %(refname:strip=2)", "refs/tags/"],
        repo,
    )
    tags = []
    for line in listing.splitlines():
        kind, peeled, name = line.split(" ", 2)
        if "commit" not in (kind, peeled):
            continue  # a tag of a tree or a blob: no release to check
        if not globs or any(fnmatch.fnmatchcase(name, glob) for glob in globs):
            tags.append(name)
    versions = {tag: names.version(tag) for tag in tags}
    unknown = sorted(t for t in tags if versions[t] is None)
    if since is not None:
        tags = [t for t in tags if (v := versions[t]) is not None and v >= since]
    ordered = sorted(tags, key=lambda t: (versions[t] is None, versions[t] or Version("0"), t))
    return TagSelection(ordered, unknown)
