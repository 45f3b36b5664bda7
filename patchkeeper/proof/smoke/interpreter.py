"""Which Python runs the smoke checks, and whether a pass under it can count.

Which interpreter: `[install] python` (a path in the install, an absolute path, or a bare name
looked up on PATH), else the install's venv. When `[install] python` names an interpreter that
is not there, nothing runs: every check is `error` ("could not check: interpreter X not
found"); running the check under some other Python instead would prove nothing about the
install. When nothing is configured and there is no venv, the checks run under patchkeeper's
own interpreter so their output can be read, with a note, and a `pass` there counts as
`error`: it proves the fix under a Python the install does not run. A pass needs the
install's own interpreter (configured, or its venv).

Separate from running a check because `doctor` asks the same question on its own (is the
interpreter there, does it run) and the reports name where it came from.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchkeeper.install.checkout.install import Install
from patchkeeper.patchset.settings import Settings

# Where a virtualenv's interpreter usually is, tried when [install] python is not set.
VENV_PYTHONS = ("venv/bin/python", ".venv/bin/python")


# Where the interpreter came from. Only the first two are the install's own: only there can a
# check pass.
CONFIGURED, VENV, OWN, MISSING = "configured", "venv", "patchkeeper", "missing"


@dataclass(frozen=True)
class Interpreter:
    """The Python a smoke check runs with, and why that one."""

    path: Path
    note: str = ""  # set when this is not the install's own interpreter, saying why
    source: str = field(default=CONFIGURED, compare=False)

    @property
    def found(self) -> bool:
        """False: [install] python names an interpreter that is not there; nothing runs."""
        return self.source != MISSING

    @property
    def installs_own(self) -> bool:
        return self.source in (CONFIGURED, VENV)


def find_python(install: Install, settings: Settings) -> Interpreter:
    """The install's interpreter: [install] python, else its venv, else ours (with a note).

    A configured interpreter that is not there is MISSING (never silently replaced by ours).
    """
    if settings.python:
        configured = Path(settings.python).expanduser()
        candidate = configured if configured.is_absolute() else install.path / configured
        if candidate.is_file():
            return Interpreter(candidate, source=CONFIGURED)
        on_path = shutil.which(settings.python) if "/" not in settings.python else None
        if on_path:
            return Interpreter(Path(on_path), source=CONFIGURED)
        where = f" in {settings.source}" if settings.source else ""
        note = f"[install] python {settings.python} not found at {candidate}{where}"
        return Interpreter(candidate, note, MISSING)
    for relative in VENV_PYTHONS:
        if (install.path / relative).is_file():
            return Interpreter(install.path / relative, source=VENV)
    note = "no [install] python set and no venv in the install"
    return Interpreter(
        Path(sys.executable), f"{note}; using patchkeeper's own {sys.executable}", OWN
    )


def interpreter_facts(python: Interpreter) -> dict[str, Any]:
    """Which interpreter ran the checks, for reports: `source` is configured, venv, patchkeeper
    (ours: a pass does not count) or missing (configured but not there: nothing ran)."""
    return {
        "path": str(python.path),
        "source": python.source,
        "found": python.found,
        "installs_own": python.installs_own,
        "note": python.note,
    }
