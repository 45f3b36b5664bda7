"""A problem found in a user's file: where it is and what is wrong, in one line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from patchkeeper.errors import UserError


@dataclass(frozen=True)
class Problem:
    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def raise_first(problems: list[Problem]) -> None:
    """Turn the first problem into the one-line error a command exits with (2)."""
    if problems:
        more = len(problems) - 1
        extra = f" (and {more} more; run `patchkeeper lint`)" if more else ""
        raise UserError(f"{problems[0]}{extra}")
