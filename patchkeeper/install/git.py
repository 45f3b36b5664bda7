"""Thin helpers around plain git commands.

Plumbing runs through subprocess rather than GitPython's object layer on purpose: the engine
needs per-call environments (GIT_INDEX_FILE), exact bytes on stdin and stdout, and exit codes
it can reason about ("check failed" is an answer, not an exception).
"""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from patchkeeper.model import exitcodes
from patchkeeper.model.errors import PatchkeeperError, names_environment_cause

# Keep git's messages stable for parsing and its prompts away from unattended runs.
_BASE_ENV = {"LC_ALL": "C", "LANG": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}


class GitError(PatchkeeperError):
    """A git command that had to succeed did not (an internal error, exit 1, unless re-raised)."""

    exit_code = 1


@functools.cache
def program() -> str:
    """The git that runs: the first on PATH, looked up once (left to the exec, each process
    would look again, one failed exec per folder before git's). Only absolute folders count:
    a relative one would be read from the repository a command runs in."""
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(folder, "git")
        if os.path.isabs(folder) and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return "git"  # not found: the exec says so


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(_BASE_ENV)
    if extra:
        env.update(extra)
    return env


def run(
    args: Sequence[str],
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    check: bool = True,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run `git ARGS` in CWD; raise GitError on failure when CHECK, or past TIMEOUT."""
    try:
        proc = subprocess.run(
            [program(), *args],
            cwd=cwd,
            env=git_env(env),
            input=stdin,
            capture_output=True,
            check=False,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise GitError(f"git {' '.join(args[:3])} gave no answer in {timeout:g} s") from None
    if check and proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip().splitlines()
        reason = detail[-1] if detail else f"exit {proc.returncode}"
        # Disk full, read-only, permission: the machine's refusal, not a bug (exit 7).
        code = exitcodes.ENVIRONMENT if names_environment_cause(reason) else None
        raise GitError(f"git {' '.join(args[:3])} failed: {reason}", code)
    return proc


def out(args: Sequence[str], cwd: Path, **kwargs: object) -> str:
    """Run git and return stdout as text, stripped."""
    return run(args, cwd, **kwargs).stdout.decode(errors="surrogateescape").strip()  # type: ignore[arg-type]


def rev_parse(cwd: Path, rev: str) -> str | None:
    """The full object name of REV, or None when it does not resolve."""
    proc = run(["rev-parse", "-q", "--verify", f"{rev}^{{commit}}"], cwd, check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None
