"""SIGKILL in the window around the upstream updater's start (phase 4), then `recover` at once:
does it know the updater, wait for it while it runs, and tell the story the disk holds?

The kill sweep (kill_sweep.py) kills under strace, which waits for every process it traces:
the updater always ends before `recover` runs there. Here patchkeeper kills itself
(PATCHKEEPER_STOP_AT_PHASE) at each point of WINDOW, outside strace, with a slow updater that
stashes what it finds, as Hermes' does: it outlives the kill as it would for real. `recover`
runs at once (exit 6 while the updater runs, then `--wait`); once no process works in the
install any more, HEAD must be where `recover` said (old or new version) and still be there,
and kill_sweep's `check` must find nothing lost or torn.

    python tests/benchmarks/window_sweep.py
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))  # run as a script too
from tests.benchmarks.kill_sweep import Fixture, Verdict, build, check, copy, git, pk

STOP_ENV = "PATCHKEEPER_STOP_AT_PHASE"

# The window around the updater's start (phase 4), with a slow updater: SIGKILL at the phase's
# record, once the updater is started and held, once it is recorded, once it is let go, and
# once it has ended. Outside strace, so the updater outlives the kill as it would for real.
WINDOW = ("4", "4.0.1", "4.0.2", "4.0.3", "4.1")
RUNNING = "4.0.3"  # the updater runs on after the kill: `recover` must say busy (6) first
SLOW_SECONDS = 2


SLOW_UPDATER = (
    f"sleep {SLOW_SECONDS}; git stash push -q --include-untracked -m hermes-update-autostash; "
    "exec git pull -q --ff-only"
)


def slow_updater(fixture: Fixture) -> None:
    """The fixture's updater, made to wait and then stash what it finds, as Hermes' does: one
    that outlives a killed patchkeeper and runs after a rollback takes the operator's files."""
    (fixture.patches / "patchkeeper.toml").write_text(
        f'[update]\ncommand = ["sh", "-c", "{SLOW_UPDATER}"]\n'
    )


def _updater_gone(install: Path, seconds: float) -> None:
    """Wait until no process works in INSTALL any more (the updater, held or let go, and
    its git): only then does the disk say what the run did."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        busy = False
        for cwd in Path("/proc").glob("[0-9]*/cwd"):
            try:
                busy = busy or Path(os.readlink(cwd)) == install
            except OSError:
                continue
        if not busy:
            return
        time.sleep(0.05)


def window_point(template: Fixture, point: str, work: Path) -> Verdict:
    """Kill `update` at POINT of WINDOW (slow updater), then `recover` at once: it must wait
    for a live updater (exit 6, then `--wait`) before deciding, and what it says (old or new
    version) must be what the disk holds once every process of the run has ended."""
    fixture = copy(template, work / f"window-{point}")
    slow_updater(fixture)
    old = git(fixture.install, "rev-parse", "HEAD")
    killed = pk(fixture.install, fixture.patches, "update", env={STOP_ENV: point})
    verdict = Verdict(killed=killed.returncode == -9)
    first = pk(fixture.install, fixture.patches, "recover", "--json")
    if point == RUNNING and first.returncode != 6:
        verdict.wrong_exit.append(f"recover did not wait for the running updater: {first.stdout}")
    if first.returncode == 6:
        first = pk(fixture.install, fixture.patches, "recover", "--json", "--wait", "60")
    if first.returncode in (1, 6) or not first.stdout.strip():
        verdict.wrong_exit.append(f"recover exit {first.returncode}: {first.stderr[-300:]}")
        return verdict
    said = json.loads(first.stdout)
    head = git(fixture.install, "rev-parse", "HEAD")
    _updater_gone(fixture.install, 60)
    if git(fixture.install, "rev-parse", "HEAD") != head:
        verdict.wrong_exit.append("HEAD moved after recover had answered")
    if said.get("direction") == "old" and head != old:
        verdict.wrong_exit.append(f"recover said the old version, HEAD is {head}")
    if said.get("direction") == "new" and head == old:
        verdict.wrong_exit.append("recover said the new version, HEAD is the old one")
    after = check(fixture)
    after.killed = verdict.killed
    after.wrong_exit[:0] = verdict.wrong_exit
    shutil.rmtree(fixture.root)
    return after


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="pk-window-") as tmp:
        template = build(Path(tmp) / "template", "update")
        for point in WINDOW:
            verdict = window_point(template, point, Path(tmp))
            problems = [*verdict.lost, *verdict.torn, *verdict.wrong_exit]
            print(f"{point}: {'right' if verdict.recovered else problems}", flush=True)


if __name__ == "__main__":
    main()
