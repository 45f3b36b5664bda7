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
    release is unknown (left out by --since: never sorted by a CalVer name); and the commit
    and tree of each tag listed, read in the same listing (check asks git for them no more)."""

    tags: list[str]
    unknown: list[str]
    objects: dict[str, tuple[str, str]]  # tag -> (its commit, that commit's tree)


def select_tags(
    repo: Path, globs: Sequence[str], since: Version | None, names: TagNames = NAMES_ARE_VERSIONS
) -> TagSelection:
    """The tags matching any of GLOBS (fnmatch: `*` matches any text, `/` included; no
    globs: every tag) that name a commit, keeping with SINCE only those whose release (NAMES:
    `[tags]`, else the name) is >= SINCE. Ordered by release (tags of unknown release last,
    by name)."""
    # A tag names a commit itself (its fields), or a tag object naming one (the `*` fields).
    fields = "%(objecttype) %(objectname) %(tree) %(*objecttype) %(*objectname) %(*tree)"
    listing = git.out(["for-each-ref", f"--format={fields} %(refname:strip=2)", "refs/tags/"], repo)
    tags = []
    objects: dict[str, tuple[str, str]] = {}
    nested: list[str] = []  # a tag of a tag: the listing peels one level only
    for line in listing.splitlines():
        *named, name = line.split(" ", 6)
        if globs and not any(fnmatch.fnmatchcase(name, glob) for glob in globs):
            continue
        kind, commit, tree = named[:3] if named[0] == "commit" else named[3:]
        if kind == "tag":
            nested.append(name)
        elif kind == "commit":  # a tag of a tree or a blob names no release: left out
            tags.append(name)
            objects[name] = (commit, tree)
    peeled = _peeled(repo, nested)
    tags += peeled
    objects.update(peeled)
    versions = {tag: names.version(tag) for tag in tags}
    unknown = sorted(t for t in tags if versions[t] is None)
    if since is not None:
        tags = [t for t in tags if (v := versions[t]) is not None and v >= since]
    ordered = sorted(tags, key=lambda t: (versions[t] is None, versions[t] or Version("0"), t))
    return TagSelection(ordered, unknown, {tag: objects[tag] for tag in ordered})


def _peeled(repo: Path, names: list[str]) -> dict[str, tuple[str, str]]:
    """The commit and tree of each of the tags NAMES (tags of tags) that ends at a commit, in
    one `cat-file` (none for no name): what the listing's one level of peeling left to ask."""
    if not names:
        return {}
    asked = "".join(f"refs/tags/{name}^{{}}\nrefs/tags/{name}^{{tree}}\n" for name in names)
    answers = git.out(
        ["cat-file", "--batch-check=%(objecttype) %(objectname)"], repo, stdin=asked.encode()
    ).splitlines()
    peeled = {}
    for name, target, root in zip(names, answers[::2], answers[1::2], strict=True):
        kind, commit = target.split(" ")[:2]  # "NAME^{} missing" for a tag that cannot peel
        if kind == "commit":
            peeled[name] = (commit, root.split(" ")[1])
    return peeled
