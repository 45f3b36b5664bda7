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
from patchkeeper.model.errors import (
    PatchkeeperError,
    is_environment_error,
    names_environment_cause,
)

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
    except OSError as exc:  # its input or output refused (a pipe): as if git had said so
        if not is_environment_error(exc):
            raise
        raise GitError(
            f"{cwd}: git {' '.join(args[:3])} failed: {exc.strerror}", exitcodes.ENVIRONMENT
        ) from None
    if proc.returncode != 0 and (check or _machine_refused(args, proc)):
        raise failed(args, cwd, proc)
    return proc


# Commands that talk to a remote: their "Permission denied" is the remote's answer.
_REMOTE = frozenset({"fetch", "ls-remote", "pull", "push"})


def _machine_refused(args: Sequence[str], proc: subprocess.CompletedProcess[bytes]) -> bool:
    """Whether a git that failed was refused a write by the machine: never an answer a
    caller reads ("no such ref", "does not apply"), whatever CHECK said, since the git that
    could not write its answer (or its index) answered nothing."""
    if args[:1] and args[0] in _REMOTE:
        return False
    return names_environment_cause(proc.stderr.decode(errors="replace"))


def failed(args: Sequence[str], cwd: Path, proc: subprocess.CompletedProcess[bytes]) -> GitError:
    """The error for `git ARGS` in CWD that ended as PROC says. Disk full, read-only,
    permission (in git's words anywhere in what it said): the machine's refusal, not a bug,
    exit 7, naming the repository git was writing to."""
    said = proc.stderr.decode(errors="replace")
    detail = said.strip().splitlines()
    reason = detail[-1] if detail else f"exit {proc.returncode}"
    if names_environment_cause(said):
        cause = next(line for line in detail if names_environment_cause(line))
        return GitError(f"{cwd}: git {' '.join(args[:3])} failed: {cause}", exitcodes.ENVIRONMENT)
    return GitError(f"git {' '.join(args[:3])} failed: {reason}")


def out(args: Sequence[str], cwd: Path, **kwargs: object) -> str:
    """Run git and return stdout as text, stripped."""
    return run(args, cwd, **kwargs).stdout.decode(errors="surrogateescape").strip()  # type: ignore[arg-type]


def rev_parse(cwd: Path, rev: str) -> str | None:
    """The full object name of REV, or None when it does not resolve."""
    proc = run(["rev-parse", "-q", "--verify", f"{rev}^{{commit}}"], cwd, check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def batch_record(output: bytes, position: int, cwd: Path) -> tuple[bytes, int]:
    """The header line of the `cat-file --batch` record at POSITION of OUTPUT and where its
    content starts. An answer cut short (git's write of it refused, a full pipe's ENOSPC) is
    the machine's refusal, exit 7: never read as a shorter answer."""
    end = output.find(b"\n", position)
    if end < 0:
        raise cut_short(cwd)
    return output[position:end], end + 1


def batch_content(output: bytes, start: int, size: int, cwd: Path) -> bytes:
    """SIZE bytes of content at START of a `cat-file --batch` OUTPUT, whole or refused."""
    if start + size > len(output):
        raise cut_short(cwd)
    return output[start : start + size]


def batch_blobs(output: bytes, names: list[str], repo: Path, missing: set[str]) -> dict[str, bytes]:
    """`cat-file --batch` OUTPUT for NAMES, asked in that order -> name: content, for the
    names that are blobs (those no object matches go into MISSING)."""
    found: dict[str, bytes] = {}
    position = 0
    for name in names:
        header, position = batch_record(output, position, repo)
        if header.endswith((b" missing", b" ambiguous")):
            if header.endswith(b" missing"):
                missing.add(name)
            continue  # not here (a `:PATH` this index holds no entry for)
        _, kind, size = header.split(b" ")
        content = batch_content(output, position, int(size), repo)
        if kind == b"blob":
            found[name] = content
        position += int(size) + 1
    return found


def cut_short(cwd: Path) -> GitError:
    return GitError(
        f"{cwd}: git cat-file --batch: its answer was cut short (its output was lost); "
        "nothing was written",
        exitcodes.ENVIRONMENT,
    )
