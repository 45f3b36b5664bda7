"""The error type whose message is what the user reads (after pre-commit's FatalError)."""

from patchkeeper import exitcodes


class PatchkeeperError(Exception):
    """A problem reported in one line with its exit code; never shown as a traceback."""

    exit_code = exitcodes.USAGE

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UserError(PatchkeeperError):
    """Bad input: a file, a flag or an install that is not what it should be (exit 2)."""


class BusyError(PatchkeeperError):
    """Another patchkeeper holds the install (exit 6)."""

    exit_code = exitcodes.BUSY
