"""The error type whose message is what the user reads (after pre-commit's FatalError)."""

from __future__ import annotations

import errno
import os

from patchkeeper.model import exitcodes

# Characters that would break "one line" or talk to the terminal: C0 and C1 controls, DEL,
# and the separators str.splitlines() breaks at; lone surrogates stand for undecodable bytes.
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(char: str) -> str:
    code = ord(char)
    if char in _SHORT:
        return _SHORT[char]
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the byte that did not decode
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _needs_escape(char: str) -> bool:
    code = ord(char)
    return (
        code < 0x20 or 0x7F <= code <= 0x9F or code in (0x2028, 0x2029) or 0xD800 <= code <= 0xDFFF
    )


def one_line(text: str) -> str:
    """TEXT with every control character escaped (`\\n`, `\\x0b`): safe to print as one line,
    whatever a patch file or a file name held."""
    if text.isprintable():
        return text
    return "".join(_escaped(c) if _needs_escape(c) else c for c in text)


class PatchkeeperError(Exception):
    """A problem reported in one line with its exit code; never shown as a traceback.

    The message is kept as one line: control characters from user files are escaped.
    """

    exit_code = exitcodes.USAGE

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(one_line(message))
        if exit_code is not None:
            self.exit_code = exit_code


class UserError(PatchkeeperError):
    """Bad input: a file, a flag or an install that is not what it should be (exit 2)."""


class BusyError(PatchkeeperError):
    """Another patchkeeper holds the install (exit 6)."""

    exit_code = exitcodes.BUSY


# What the machine, not the user's input nor a bug, refuses: disk full, quota, a read-only
# file system, permission (EACCES, and EPERM: an immutable file, a sticky folder), an I/O error.
ENVIRONMENT_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO}
)
# git's own words for a write the machine refused, where it names no errno: "fatal: Out of
# diskspace", "fatal: Unable to write new index file", "error: couldn't write '.git/x.lock'",
# "fatal: write failure on 'stdout'", "error: unable to write loose object file".
GIT_WRITE_WORDS = (
    "Out of diskspace",
    "nable to write",
    "ouldn't write",
    "ould not write",
    "ailed to write",
    "write error",
    "write failure",
    "short write",
    "unable to stream",
    "insufficient permission",
)
ENVIRONMENT_WORDS = (
    *(os.strerror(number) for number in sorted(ENVIRONMENT_ERRNOS)),
    *GIT_WRITE_WORDS,
)


class EnvironmentProblem(PatchkeeperError):
    """The machine refused a write or a read (exit 7); UNDONE: nothing was left half-written."""

    exit_code = exitcodes.ENVIRONMENT

    def __init__(self, message: str, *, undone: bool = True) -> None:
        super().__init__(message)
        self.undone = undone


def environment_problem(
    exc: OSError, path: os.PathLike | str, *, undone: bool
) -> EnvironmentProblem:
    """EXC on PATH as the one line the user reads; UNDONE says whether what was written
    before it was put back (else `patchkeeper recover` finishes the job)."""
    cause = exc.strerror or str(exc)
    after = (
        "what was being written was left as it was"
        if undone
        else "run `patchkeeper recover` once that is fixed"
    )
    return EnvironmentProblem(f"{path}: {cause}; {after}", undone=undone)


def is_environment_error(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in ENVIRONMENT_ERRNOS


def names_environment_cause(text: str) -> bool:
    """Whether a message (git's stderr) names one of the machine's refusals."""
    return any(word in text for word in ENVIRONMENT_WORDS)
