"""The sandbox: a practice upstream shaped like Hermes Agent, in real git repositories.

It is built from source data shipped beside this module, written for patchkeeper (never
copied from upstream). Its hook points have the real upstream's names, signatures and
layout, and the lines the bundled patches touch match the real files, so the sandbox runs
the bundled Hermes patch set (`patches/`) unchanged:

    upstream/            the first release (0.21.2), file by file
    releases/TAG.diff    every later release as a diff on the one before; the text above
                         the first `diff --git` line is the release's commit message
    releases/BRANCH.diff a commit on main past a release that no release carries (history.py
                         MAIN_COMMITS), kept on origin's branch BRANCH

Commits are made with plumbing in a bare repository (no work tree, no checkout), with fixed
names and dates, so every build yields the same commit shas. Each release is tagged the way
upstream tags them, by date (history.py's `RELEASE_TABLE` maps each tag to its version; the
annotated tag's message names the version too). Like the real installer, the builder writes
the install's `install-stamp.json` (from 0.21.5 on the only place the version is written).
The releases follow the real release history at the hook points, and what each does to the
bundled patches:

    0.21.2 (v2026.9.11)
             like real 0.21.0-0.21.2: the launcher waits a hard-coded 5 s for the ack, does
             not import HANDOFF_ADOPTION_GRACE_SECONDS, and compares the argv list
             tools.process_registry returns: adoption-retry is not-applicable (Applies-To
             >=0.21.3); schema-once applies; the fire-claim heartbeat renews through the
             fire fence its run holds (before upstream PR #109310): heartbeat-fence applies
    0.21.3 (v2026.9.14)
             like real 0.21.3 (PR #110192): the ack wait is the 30 s grace, the launcher reads
             the dispatch mode: adoption-retry and schema-once apply; the heartbeat renews
             under the jobs lock only (PR #109310): heartbeat-fence is upstream-has-it from
             here on (scoped probe); the sandbox installs this release
    0.21.5 (v2026.9.24)
             code moved down: both apply at an offset; hermes_cli/__init__.py states no
             version any more (served from the install stamp)
    0.21.5+1 (branch restructured-worker, a main-channel commit no release carries)
             worker and launcher restructured like upstream's at 5a1920c7, still adopting
             once: adoption-retry's 0.21 variant keeps its launcher and import hunks and
             loses its worker hunk; its restructured variant applies (chosen by content);
             schema-once applies
    0.22.0 (v2026.10.1)
             more code moved down: both apply at an offset
    0.22.1 (v2026.10.8)
             upstream wires its own adopt_with_retry in the worker only (the launcher writes
             no deadline): adoption-retry conflicts, never upstream-has-it
    0.23.0 (v2026.10.26)
             the launcher writes the deadline too: adoption-retry is upstream-has-it (by
             content, scoped probes); schema-once still applies
    0.24.0 (v2026.11.9)
             `_connect` reformatted: schema-once conflicts

No release moves the worker out of cron/scheduler.py: upstream never did (the split module
of that name is a fork's).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from patchkeeper.demo.history import (
    INSTALL_TAG,
    MAIN_COMMITS,
    RELEASE_TABLE,
    TAG_OF,
    TAGS,
    VERSIONS,
    published_ref,
    release_tag,
)
from patchkeeper.install.plumbing import git
from patchkeeper.model.errors import UserError
from patchkeeper.patchset.bundled import bundled_patches
from patchkeeper.patchset.settings import CONFIG_NAME

# Tests and the demo take the history's names from here too.
__all__ = [
    "INSTALL_TAG", "OPERATOR", "RELEASE_TABLE", "TAGS", "TAG_OF", "VERSIONS", "Sandbox",
    "build_sandbox", "open_copied_sandbox", "release_tag",
]  # fmt: skip
DATA = Path(__file__).resolve().parent
UPSTREAM_TREE = DATA / "upstream"
RELEASE_DIFFS = DATA / "releases"
EXECUTABLES = frozenset({"hermes"})
_SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc")
_UPSTREAM = ("Hermes Practice Upstream", "upstream@sandbox.invalid")
# `hermes update` stashes local changes, and `git stash` needs an identity. The install gets
# this one in its own .git/config, so the sandbox works where git has no global identity.
OPERATOR = ("Sandbox Operator", "operator@sandbox.invalid")
# Keep the operator's git config out of the builder: a global commit.gpgsign, hook path or
# autocrlf would change (or break) the commits.
_ISOLATED = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


@dataclass(frozen=True)
class Sandbox:
    """The folders of one sandbox; `root` holds them all and nothing else."""

    root: Path
    origin: Path  # bare repository: the upstream, every release tag, main at the published one
    install: Path  # shallow clone of origin's main, like the real installer makes
    home: Path  # HERMES_HOME for everything run in the sandbox
    patches: Path  # a copy of the bundled Hermes patch set, with a patchkeeper.toml for here

    @property
    def config(self) -> Path:
        return self.patches / CONFIG_NAME

    def publish(self, name: str) -> str:
        """Publish NAME upstream: move origin's main to it, so a later `hermes update` gets it.

        NAME is a release (its tag or version) or a main commit (its branch or version, e.g.
        `0.21.5+1`); returns what it is called (the tag, or the branch)."""
        called, ref = published_ref(name)
        _git(["update-ref", "refs/heads/main", f"{ref}^{{commit}}"], self.origin)
        return called

    def published(self) -> str | None:
        """The release tag or main commit's branch origin's main is at (None: neither)."""
        main = _git(["rev-parse", "refs/heads/main"], self.origin)
        for name in (*TAGS, *MAIN_COMMITS):
            if _git(["rev-parse", f"{published_ref(name)[1]}^{{commit}}"], self.origin) == main:
                return name
        return None

    def next_release(self) -> str:
        """The release after the published one (after a main commit: after its base)."""
        current = self.published()
        if current in MAIN_COMMITS:
            current = MAIN_COMMITS[current].base
        if current is None or current == TAGS[-1]:
            raise UserError(f"{self.origin}: no practice release after {current or 'main'}")
        return TAGS[TAGS.index(current) + 1]

    def fetch_tags(self) -> None:
        """Fetch every release tag into the install (for `check --ref TAG`).

        `hermes update` fetches only the branch, so a shallow install knows no later tags.
        """
        _git(["fetch", "-q", "--tags", "origin"], self.install)

    def hermes_env(self) -> dict[str, str]:
        """The environment to run the install's code in: HERMES_HOME is this sandbox's home.

        The sandbox falls back to `home/` only when HERMES_HOME is unset; an operator who has
        it set must never see a practice run write into their real state.
        """
        return {**os.environ, "HERMES_HOME": str(self.home)}

    def write_config(self) -> None:
        """(Re)write patches/patchkeeper.toml with this sandbox's absolute paths.

        The version sources are the bundled set's (the stamp, the literal, describe); the
        [tags] table names every practice release, from RELEASE_TABLE.
        """
        # A JSON string is a valid TOML basic string, quotes and backslashes escaped alike.
        tags = "".join(f"{json.dumps(r.tag)} = {json.dumps(r.version)}\n" for r in RELEASE_TABLE)
        self.config.write_text(
            "# Written by patchkeeper's sandbox builder for this sandbox only.\n"
            "[install]\n"
            f"path = {json.dumps(str(self.install))}\n"
            f"python = {json.dumps(sys.executable)}\n"
            "\n"
            "# From 0.21.5 on the version is only in install-stamp.json\n"
            "[[install.version_source]]\n"
            'json = "install-stamp.json"\n'
            'key = "baseVersion"\n'
            'distance_key = "distance"\n'
            'commit_key = "commit"\n'
            "\n"
            "[[install.version_source]]\n"
            'file = "hermes_cli/__init__.py"\n'
            "\n"
            "[[install.version_source]]\n"
            "describe = true\n"
            "\n"
            "[tags]\n"
            f"{tags}"
            "\n"
            "[update]\n"
            'command = ["./hermes", "update", "--yes"]\n',
            encoding="utf-8",
        )


def _layout(root: Path) -> Sandbox:
    root = root.resolve()
    return Sandbox(
        root=root,
        origin=root / "origin.git",
        install=root / "hermes-agent",
        home=root / "home",
        patches=root / "patches",
    )


def build_sandbox(root: Path, *, install_tag: str = INSTALL_TAG) -> Sandbox:
    """Build a sandbox in ROOT (new or empty); the install starts at INSTALL_TAG (anything
    `Sandbox.publish` takes: a release's tag or version, or a main commit).

    Needs no network: origin is a local bare repository, cloned over file://.
    """
    published_ref(install_tag)
    if root.exists() and any(root.iterdir()):
        raise UserError(f"{root}: not empty; a sandbox needs an empty or new folder")
    sandbox = _layout(root)
    sandbox.root.mkdir(parents=True, exist_ok=True)
    _build_origin(sandbox.origin)
    called = sandbox.publish(install_tag)
    _clone_install(sandbox)
    main_commit = MAIN_COMMITS.get(called)
    if main_commit is None:
        _stamp_install(sandbox, VERSIONS[called], 0)
    else:
        _stamp_install(sandbox, VERSIONS[main_commit.base], 1)
    sandbox.home.mkdir()
    shutil.copytree(bundled_patches(), sandbox.patches, ignore=_SKIPPED)
    sandbox.write_config()
    return sandbox


def open_copied_sandbox(root: Path) -> Sandbox:
    """The sandbox copied to ROOT, made independent of the one it was copied from.

    A copy still names the original's origin (the install's remote URL) and paths (the
    generated patchkeeper.toml); both are pointed at the copy here.
    """
    sandbox = _layout(root)
    if not (sandbox.install / ".git").is_dir() or not sandbox.origin.is_dir():
        raise UserError(f"{root}: not a sandbox (no hermes-agent/ and origin.git/)")
    _git(["remote", "set-url", "origin", sandbox.origin.as_uri()], sandbox.install)
    sandbox.write_config()
    return sandbox


def _git(
    args: list[str], cwd: Path, *, env: dict[str, str] | None = None, stdin: bytes | None = None
) -> str:
    return git.out(args, cwd, env={**_ISOLATED, **(env or {})}, stdin=stdin)


def _identity(who: tuple[str, str], date: str) -> dict[str, str]:
    name, email = who
    env: dict[str, str] = {}
    for role in ("AUTHOR", "COMMITTER"):
        env.update({f"GIT_{role}_NAME": name, f"GIT_{role}_EMAIL": email, f"GIT_{role}_DATE": date})
    return env


# ---------------------------------------------------------------- origin


def _build_origin(origin: Path) -> None:
    _git(["init", "-q", "--bare", "-b", "main", str(origin)], origin.parent)
    parent = None
    with tempfile.TemporaryDirectory(prefix="sandbox-index-") as scratch:
        index = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        for release in RELEASE_TABLE:
            env = {**index, **_identity(_UPSTREAM, release.date)}
            if parent is None:
                _stage_tree(origin, UPSTREAM_TREE, env)
                message = f"Hermes Agent {release.version}\n"
            else:
                message = _stage_release(origin, RELEASE_DIFFS / f"{release.tag}.diff", env)
            tree = _git(["write-tree"], origin, env=env)
            parents = ["-p", parent] if parent else []
            commit = _git(["commit-tree", tree, *parents], origin, env=env, stdin=message.encode())
            # The tag's message names the version: the practice updater reads it from there
            tag_message = f"Hermes Agent {release.version}"
            _git(["tag", "-a", "-m", tag_message, release.tag, commit], origin, env=env)
            parent = commit
        for main_commit in MAIN_COMMITS.values():
            env = {**index, **_identity(_UPSTREAM, main_commit.date)}
            base = f"refs/tags/{main_commit.base}^{{commit}}"
            _git(["read-tree", base], origin, env=env)
            message = _stage_release(origin, RELEASE_DIFFS / f"{main_commit.branch}.diff", env)
            tree = _git(["write-tree"], origin, env=env)
            base_commit = _git(["rev-parse", base], origin)
            args = ["commit-tree", tree, "-p", base_commit]
            commit = _git(args, origin, env=env, stdin=message.encode())
            _git(["update-ref", f"refs/heads/{main_commit.branch}", commit], origin)


def _stage_tree(origin: Path, folder: Path, env: dict[str, str]) -> None:
    """Put every file under FOLDER into the (empty) index, `hermes` as an executable."""
    files = sorted(
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    )
    paths = "".join(f"{folder / name}\n" for name in files).encode()
    hashing = ["hash-object", "-w", "--no-filters", "--stdin-paths"]
    blobs = _git(hashing, origin, env=env, stdin=paths).split()
    entries = "".join(
        f"{'100755' if name in EXECUTABLES else '100644'} {blob}\t{name}\n"
        for name, blob in zip(files, blobs, strict=True)
    )
    _git(["update-index", "--add", "--index-info"], origin, env=env, stdin=entries.encode())


def _stage_release(origin: Path, diff_file: Path, env: dict[str, str]) -> str:
    """Apply one release diff to the index, which holds the release before it.

    Returns the release's commit message: the text above the diff's first `diff --git`.
    """
    data = diff_file.read_bytes()
    _git(["apply", "--cached"], origin, env=env, stdin=data)
    return data[: data.index(b"diff --git ")].decode("utf-8").strip() + "\n"


# ---------------------------------------------------------------- install


def _clone_install(sandbox: Sandbox) -> None:
    """A shallow clone over file:// (a plain path would ignore --depth), branch main."""
    uri, target = sandbox.origin.as_uri(), str(sandbox.install)
    _git(["clone", "-q", "--depth=1", "--branch=main", uri, target], sandbox.root)
    name, email = OPERATOR
    _git(["config", "user.name", name], sandbox.install)
    _git(["config", "user.email", email], sandbox.install)


def _stamp_install(sandbox: Sandbox, base: str, distance: int) -> None:
    """Write install-stamp.json as upstream's installer does, with the install's own writer:
    from 0.21.5 on it is the only place the install's version is written."""
    command = [sys.executable, "-m", "hermes_cli.install_stamp", "--base-version", base]
    command += ["--distance", str(distance)]
    subprocess.run(command, cwd=sandbox.install, check=True, capture_output=True)
