"""Running a list of a patch set's checks, in order, each once, under the install's interpreter.

The set's rules live here: dead runs' scratch folders are cleared first, a configured
interpreter that is missing makes every check `error` without running it, and a pass under
patchkeeper's own interpreter is `error` (it proves nothing about the install).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from dataclasses import replace

from patchkeeper.install.checkout.install import Install
from patchkeeper.patchset.model import PatchSet
from patchkeeper.patchset.settings import Settings
from patchkeeper.proof.smoke.catalog import check_file
from patchkeeper.proof.smoke.check_home import SCRATCH_DIR, clear_dead_scratch
from patchkeeper.proof.smoke.interpreter import Interpreter, find_python
from patchkeeper.proof.smoke.one_check import Progress, run_check
from patchkeeper.proof.smoke.results import ERROR, PASS, CheckResult, SmokeReport


def run_checks(
    install: Install,
    settings: Settings,
    patch_set: PatchSet,
    names: Iterable[str],
    on_progress: Progress | None = None,
    *,
    args: Sequence[str] = (),
    timeout: float | None = None,
) -> SmokeReport:
    """Run the named checks of PATCH_SET, in order, each once, with ARGS (`--probe`)."""
    python = find_python(install, settings)
    scratch_root = install.state_dir / SCRATCH_DIR
    with contextlib.suppress(OSError):
        clear_dead_scratch(scratch_root)  # left by runs that were killed
    results = []
    for name in dict.fromkeys(n.removesuffix(".py") for n in names):
        path = check_file(patch_set, name)
        if path is None:
            results.append(CheckResult(name, ERROR, 0.0, detail=f"{name!r} is not a check name"))
            continue
        if not python.found:
            detail = f"could not check: interpreter {python.path} not found ({python.note})"
            results.append(CheckResult(name, ERROR, 0.0, detail=detail))
            continue
        if on_progress is not None:
            on_progress(name, f"running with {python.path}")
        limit = timeout or settings.smoke_timeout
        result = run_check(
            python,
            install.path,
            path,
            timeout=limit,
            args=args,
            on_progress=on_progress,
            scratch_root=scratch_root,
        )
        results.append(result if python.installs_own else _not_the_installs(result, python))
    return SmokeReport(python, tuple(results))


def _not_the_installs(result: CheckResult, python: Interpreter) -> CheckResult:
    """A result under patchkeeper's own interpreter: a pass proves nothing about the install."""
    if result.verdict == PASS:
        detail = (
            f"could not check: passed under patchkeeper's own interpreter {python.path}, not "
            "the install's (no [install] python set and no venv in the install)"
        )
        return replace(result, verdict=ERROR, detail=detail)
    under = f"under patchkeeper's own interpreter {python.path}"
    return replace(result, detail=f"{result.detail} ({under})" if result.detail else under)
