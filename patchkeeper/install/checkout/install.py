"""The install: the upstream git checkout that runs; where it is, its git state, its version."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from patchkeeper.install.checkout.version_chain import worktree_version
from patchkeeper.install.plumbing import git
from patchkeeper.model.errors import EnvironmentProblem, UserError
from patchkeeper.patchset.settings import Settings
from patchkeeper.patchset.versions import VersionInfo

STATE_DIR_NAME = "patchkeeper"

# Files git leaves in its directory while an operation waits for the user.
_IN_PROGRESS = {
    "MERGE_HEAD": "a merge",
    "rebase-merge": "a rebase",
    "rebase-apply": "a rebase or git am",
    "CHERRY_PICK_HEAD": "a cherry-pick",
    "REVERT_HEAD": "a revert",
}


@dataclass(frozen=True)
class Install:
    """A git-installed project: its work tree (PATH) and its git folder."""

    path: Path
    git_dir: Path

    @property
    def state_dir(self) -> Path:
        """Tool state lives under .git/, never in the work tree the updater stashes."""
        return self.git_dir / STATE_DIR_NAME

    def head(self) -> str | None:
        return git.rev_parse(self.path, "HEAD")


def open_install(path: Path) -> Install:
    """The checkout at PATH, or a one-line error (exit 2) saying why it is not one.

    One `git rev-parse` answers all three questions (a repository? bare? its top and git
    directory?), which matters for a tool that runs first in every command.
    """
    path = path.expanduser()
    if not path.is_dir():
        raise UserError(f"{path}: install not found (set [install] path or pass --install)")
    proc = git.run(
        ["rev-parse", "--is-bare-repository", "--absolute-git-dir", "--show-toplevel"],
        path,
        check=False,
    )
    answers = proc.stdout.decode(errors="surrogateescape").splitlines()
    if proc.returncode != 0 and b"not a git repository" in proc.stderr:
        raise UserError(f"{path}: not a git repository")
    if proc.returncode != 0 and b"dubious ownership" in proc.stderr:
        raise _not_owned(path, proc.stderr.decode(errors="surrogateescape"))
    if answers[:1] == ["true"]:
        raise UserError(f"{path}: a bare repository is not an install")
    said = proc.stderr.decode(errors="replace").strip().splitlines()
    if len(answers) < 3 and proc.returncode != 0 and said:  # git refused it (a .git folder)
        raise UserError(f"{path}: not a checkout: git: {said[-1].removeprefix('fatal: ')}")
    if len(answers) < 3:  # git's answer did not reach us (its write refused): not "bare"
        raise EnvironmentProblem(
            f"{path}: git rev-parse gave no answer (its output was lost, exit "
            f"{proc.returncode}); nothing was changed"
        )
    top = Path(answers[2]).resolve()
    if top != path.resolve():
        raise UserError(f"{path}: not the top of a checkout (that is {top})")
    return Install(path=top, git_dir=Path(answers[1]).resolve())


def _not_owned(path: Path, said: str) -> EnvironmentProblem:
    """git refuses a repository another user owns (its safe.directory check): said as git says
    it, with the command git names to trust it (exit 7: the machine refused the read)."""
    named = re.search(r"safe\.directory (.+)$", said, re.MULTILINE)
    folder = named.group(1).strip() if named else str(path.resolve())
    if folder.startswith("'") and folder.endswith("'"):
        folder = folder[1:-1]  # newer git quotes it
    return EnvironmentProblem(
        f"{path}: git refuses it: dubious ownership (the repository belongs to another user); "
        f"if you trust it: git config --global --add safe.directory {shlex.quote(folder)}"
    )


def operation_in_progress(install: Install, unmerged: list[str] | None = None) -> str | None:
    """What unfinished git operation (or unmerged paths) the install is in, if any. UNMERGED:
    the unmerged paths (sorted), when the caller has just asked (else git is asked)."""
    for name, what in _IN_PROGRESS.items():
        if (install.git_dir / name).exists():
            return f"the install is in the middle of {what} ({install.git_dir / name})"
    if unmerged is None:
        listed = git.out(["ls-files", "-u", "--", "."], install.path)
        unmerged = [line.split("\t", 1)[-1] for line in listed.splitlines()]
    if unmerged:
        return f"the install has unmerged paths ({unmerged[0]})"
    return None


def refuse_if_busy_with_git(install: Install, unmerged: list[str] | None = None) -> None:
    """Refuse an install in the middle of a git operation; UNMERGED: see
    `operation_in_progress` (an empty list: the caller lists them itself, a moment later)."""
    reason = operation_in_progress(install, unmerged)
    if reason:
        raise UserError(f"{install.path}: {reason}; finish or abort it first")


def behind_upstream(install: Install) -> str | None:
    """How far the checked-out branch is behind the branch it follows, when it is only
    behind (it could fast-forward): `2 commit(s) behind origin/main`. None when HEAD is
    detached, follows no branch, is even with it, ahead of it or diverged from it (one git
    call)."""
    listed = git.out(
        [
            "for-each-ref",
            "--points-at",
            "HEAD",
            "--format=%(HEAD)%(upstream:short)%00%(upstream:track,nobracket)",
            "refs/heads/",
        ],
        install.path,
    )
    for line in listed.splitlines():
        upstream, _, track = line.partition("\0")
        behind = re.fullmatch(r"behind (\d+)", track)
        if upstream.startswith("*") and upstream[1:] and behind:
            return f"{behind[1]} commit(s) behind {upstream[1:]}"
    return None


def install_version(install: Install, settings: Settings) -> VersionInfo:
    """The version that runs: the patch set's version sources asked in the work tree, the
    first to answer wins (install/checkout/version_chain.py)."""
    return worktree_version(install.path, settings)
