"""Running one check file against the install, in its own process group, into its result.

A check imports upstream code, so it runs with the install's own interpreter, cwd at the
install, the install on `sys.path` (PYTHONPATH), a fresh HERMES_HOME, HOME and TMPDIR (never
the operator's; see `scratch`), a minimal environment and a timeout. It runs in its own process
group, which is killed when it ends or times out, so helper processes a check starts cannot
outlive it. It may write `progress: TEXT` lines on stderr while it runs; they are relayed as
they come.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from patchkeeper.install.processes.process_groups import run_in_group
from patchkeeper.proof.smoke.check_home import GROUP_FILE, scratch_folder
from patchkeeper.proof.smoke.interpreter import Interpreter
from patchkeeper.proof.smoke.parse import CheckOutput, parse_verdict
from patchkeeper.proof.smoke.results import ERROR, CheckResult

PROGRESS_PREFIX = "progress: "


_OUTPUT_LIMIT = 1 << 20  # bytes of stdout kept; a verdict is a few KB
_STDERR_TAIL = 20  # lines of stderr kept to explain a crash

Progress = Callable[[str, str], None]  # (check name, text)
Relay = Callable[[str], None]  # text, for the one check that is running


def clean_env(install: Path, python: Path, scratch: Path) -> dict[str, str]:
    """A minimal environment: nothing of the operator's HOME, HERMES_HOME or secrets leaks in."""
    for name in ("home", "hermes-home", "tmp"):
        (scratch / name).mkdir()
    return {
        "PATH": os.pathsep.join([str(python.parent), os.defpath]),
        "HOME": str(scratch / "home"),
        "HERMES_HOME": str(scratch / "hermes-home"),
        "TMPDIR": str(scratch / "tmp"),
        "PYTHONPATH": str(install),
        "PYTHONDONTWRITEBYTECODE": "1",  # never leave __pycache__ in the install
        "PYTHONUNBUFFERED": "1",
        "PYTHONUTF8": "1",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }


def _run_process(
    argv: Sequence[str],
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    relay: Relay,
    on_start: Callable[[int], None] | None = None,
) -> CheckOutput:
    out = bytearray()
    tail: list[str] = []

    def stdout_line(raw: bytes) -> None:
        if len(out) < _OUTPUT_LIMIT:
            out.extend(raw[: _OUTPUT_LIMIT - len(out)])

    def stderr_line(raw: bytes) -> None:
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if line.startswith(PROGRESS_PREFIX):
            relay(line[len(PROGRESS_PREFIX) :])
        elif line.strip():
            tail.append(line)
            del tail[:-_STDERR_TAIL]

    # end_group: the check's helpers (a lock holder, a worker) die with it, whatever happened.
    finished = run_in_group(
        argv,
        cwd,
        timeout=timeout,
        on_stdout=stdout_line,
        on_stderr=stderr_line,
        env=env,
        on_start=on_start,
        end_group=True,
    )
    if finished.start_error:
        return CheckOutput(127, "", (finished.start_error,), 0.0)
    returncode = None if finished.timed_out else finished.exit_status
    return CheckOutput(
        returncode, out.decode("utf-8", errors="replace"), tuple(tail), finished.seconds
    )


def run_check(
    python: Interpreter,
    install: Path,
    path: Path,
    *,
    timeout: float,
    args: Sequence[str] = (),
    on_progress: Progress | None = None,
    scratch_root: Path | None = None,
) -> CheckResult:
    """Run one check file against INSTALL and return its (never optimistic) result.

    Its HOME, HERMES_HOME and TMPDIR are in a fresh folder under SCRATCH_ROOT (the install's
    state dir; else a temp dir), removed when the check ends.
    """
    name = path.stem
    if not path.is_file():
        return CheckResult(name, ERROR, 0.0, detail=missing_check(name, path))

    def relay(text: str) -> None:
        if on_progress is not None:
            on_progress(name, text)

    with scratch_folder(scratch_root, name) as scratch:

        def started(pgid: int) -> None:
            with contextlib.suppress(OSError):
                (scratch / GROUP_FILE).write_text(str(pgid))

        env = clean_env(install, python.path, scratch)
        argv = [str(python.path), "-B", str(path), *args]
        run = _run_process(argv, install, env, timeout, relay, started)
    return parse_verdict(name, run)


def missing_check(name: str, path: Path) -> str:
    return f"could not check: no check named {name} ({path} is missing)"
