"""The practice upstream's history: its releases (tag, version, date) and the commit on its
main branch past a release that a main-channel install runs. The one table of tag <-> version.

Upstream tags a release by its date (`v2026.9.24` is 0.21.5): a tag's name says nothing of
the version, so the builder, the demo and the tests look it up here. The first four tags are
upstream's own for the same versions; the later releases are fictional, dated in the same
calendar.
"""

from __future__ import annotations

from dataclasses import dataclass

from patchkeeper.model.errors import UserError


@dataclass(frozen=True)
class Release:
    """One practice release: its tag, the version it is, and its commit and tag date (part of
    what makes the shas reproducible)."""

    tag: str
    version: str
    date: str


@dataclass(frozen=True)
class MainCommit:
    """A commit on upstream's main one past release BASE and tagged by none: what a
    main-channel install runs (`<base>+1`). It is kept on origin's branch BRANCH, off the
    release line, so the releases after BASE do not carry it (a main-channel install at
    `0.21.5+N` may hold either shape of the worker)."""

    branch: str
    base: str
    date: str

    @property
    def version(self) -> str:
        return f"{VERSIONS[self.base]}+1"


RELEASE_TABLE = (
    Release("v2026.9.11", "0.21.2", "2026-09-11T12:00:00+00:00"),
    Release("v2026.9.14", "0.21.3", "2026-09-14T12:00:00+00:00"),
    Release("v2026.9.24", "0.21.5", "2026-09-24T12:00:00+00:00"),
    Release("v2026.10.1", "0.22.0", "2026-10-01T12:00:00+00:00"),
    Release("v2026.10.8", "0.22.1", "2026-10-08T12:00:00+00:00"),
    Release("v2026.10.26", "0.23.0", "2026-10-26T12:00:00+00:00"),
    Release("v2026.11.9", "0.24.0", "2026-11-09T12:00:00+00:00"),
)
TAGS = tuple(release.tag for release in RELEASE_TABLE)
VERSIONS = {release.tag: release.version for release in RELEASE_TABLE}
TAG_OF = {release.version: release.tag for release in RELEASE_TABLE}
INSTALL_TAG = TAG_OF["0.21.3"]  # where a sandbox's install starts unless asked otherwise
# The worker restructured like upstream's at 5a1920c7 (try moved up, plugins and config
# hooks first, ack written then renamed; the launcher captures stderr and marks the worker),
# still adopting once, with no deadline.
RESTRUCTURED_WORKER = MainCommit(
    "restructured-worker", TAG_OF["0.21.5"], "2026-09-27T12:00:00+00:00"
)
MAIN_COMMITS = {commit.branch: commit for commit in (RESTRUCTURED_WORKER,)}


def release_tag(name: str) -> str:
    """The tag of the practice release NAME: a tag (`v2026.9.14`) or a version (`0.21.3`)."""
    if name in VERSIONS:
        return name
    if name in TAG_OF:
        return TAG_OF[name]
    choices = ", ".join(f"{r.tag} ({r.version})" for r in RELEASE_TABLE)
    raise UserError(f"{name!r} is not a sandbox release; choose one of {choices}")


def published_ref(name: str) -> tuple[str, str]:
    """(what to call it, origin's ref) for NAME: a release (tag or version), or a main commit
    (its branch, or its version like `0.21.5+1`)."""
    for commit in MAIN_COMMITS.values():
        if name in (commit.branch, commit.version):
            return commit.branch, f"refs/heads/{commit.branch}"
    try:
        tag = release_tag(name)
    except UserError:
        mains = ", ".join(f"{c.branch} ({c.version})" for c in MAIN_COMMITS.values())
        choices = ", ".join(f"{r.tag} ({r.version})" for r in RELEASE_TABLE)
        raise UserError(
            f"{name!r} is not a sandbox release or main commit; choose one of {choices}, {mains}"
        ) from None
    return tag, f"refs/tags/{tag}"
