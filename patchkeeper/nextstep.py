"""The next command a person should run, printed so that it works when pasted into a shell.

Every item that needs someone names one. Paths are absolute and every word is shell-quoted
(shlex), so the line can be pasted from a report into any shell, from any folder.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path


def command(
    *words: str | Path,
    install: Path | None = None,
    patches: Path | None = None,
    rest: Sequence[str] = (),
) -> str:
    """`patchkeeper WORDS --install INSTALL --patches PATCHES [-- REST]`, shell-quoted."""
    argv = ["patchkeeper", *map(str, words)]
    if install is not None:
        argv += ["--install", str(install)]
    if patches is not None:
        argv += ["--patches", str(patches)]
    if rest:
        argv += ["--", *rest]
    return shlex.join(argv)


def shell(*argv: str | Path) -> str:
    """Any other command (git, rm, kill), shell-quoted."""
    return shlex.join(map(str, argv))
