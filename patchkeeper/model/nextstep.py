"""The next command a person should run, printed so that it works when pasted into a shell.

Every item that needs someone names one. Paths are absolute and every word is shell-quoted
(shlex), so the line can be pasted from a report into any shell, from any folder.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from patchkeeper.model import outcomes as oc
from patchkeeper.model.outcomes import PatchResult


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


def for_patch(
    result: PatchResult, install: Path, patches: Path, version_advice: str = ""
) -> str | None:
    """One line for a patch result that needs a person: what is wrong, and the command that
    settles it. None when the result needs nobody."""
    name = result.name
    if result.outcome == oc.CONFLICT:
        refresh = command("refresh", name, install=install, patches=patches)
        return (
            f"{name} conflicts ({result.detail}): make the fix by hand in the files named, "
            f"then {refresh}"
        )
    if result.outcome == oc.INVALID:
        lint = command("lint", patches=patches)
        return f"{name} is not a patch git can read ({result.detail}): fix it, check with {lint}"
    if result.outcome == oc.DRIFTED:
        refresh = command("refresh", name, install=install, patches=patches)
        unapply = command("unapply", name, install=install, patches=patches)
        return (
            f"{name} was changed by hand since it was applied: keep the hand edit as the patch "
            f"with {refresh}, or take it out with {unapply}"
        )
    if result.outcome == oc.EXPIRED:
        return f"{name} expired: {result.detail}"
    if result.outcome == oc.PENDING:
        return f"{name} is not applied yet: {command('apply', install=install, patches=patches)}"
    if result.undecided:  # VERSION_ADVICE: the cause, from why each version source gave none
        where = patches / 'patchkeeper.toml'
        advice = version_advice or f"say where the version is kept in {where}"
        return f"{name} is undecided: the install's version is unknown; {advice}"
    return None
