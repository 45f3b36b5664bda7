"""A problem found in a user's file: where it is and what is wrong, in one line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from patchkeeper.model.errors import UserError, one_line


@dataclass(frozen=True)
class Problem:
    """What is wrong in a user's file, and at which line (1-based)."""

    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        """`FILE:LINE: message` on one line: control characters from the file are escaped."""
        return one_line(f"{self.path}:{self.line}: {self.message}")


def raise_first(problems: list[Problem]) -> None:
    """Turn the first problem into the one-line error a command exits with (2)."""
    if problems:
        more = len(problems) - 1
        extra = f" (and {more} more; run `patchkeeper lint`)" if more else ""
        raise UserError(f"{problems[0]}{extra}")
