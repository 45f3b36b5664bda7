"""One patchkeeper per install, with real processes: busy is not dead, dead is proven.

The kernel proves death: the owner holds flock on the lock file for its life, and the lock is
released by the kernel when the owner dies. A live owner, however slow, is never taken over
(exit 6 naming its pid, start and phase); a lock whose recorded owner was killed is taken over,
and that is reported. The lock file is never removed; a released lock is an empty file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from itertools import pairwise
from pathlib import Path

import pytest

from patchkeeper.demo.sandbox import Sandbox
from patchkeeper.install.system.liveness import process_start_time
from tests.helpers import GIT_ID, git
from tests.test_update import applied, pk, pk_json, quiet, set_command

RACERS = 8

HOLDER = textwrap.dedent(
    """
    import os, signal, sys, time
    from pathlib import Path
    from patchkeeper.install.locks.install_lock import install_lock
    state_dir, mode = Path(sys.argv[1]), sys.argv[2]
    with install_lock(state_dir, "holder") as lock:
        lock.set_phase("slow-phase")
        print("held", flush=True)
        if mode == "die":
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(float(mode))
    """
)

# A process holding flock on a lock file whose content it leaves alone: ARGV = the file.
HOLD_RAW = textwrap.dedent(
    """
    import fcntl, os, sys, time
    fd = os.open(sys.argv[1], os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("held", flush=True)
    time.sleep(30)
    """
)

# Wait for the gate, take the lock, hold it a moment, record the interval and any overlap.
RACER = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path
    from patchkeeper.install.locks.install_lock import install_lock
    state_dir, gate, inside, log = map(Path, sys.argv[1:5])
    while not gate.exists():
        time.sleep(0.001)
    with install_lock(state_dir, "racer", wait=60) as lock:
        entered = time.monotonic()
        try:
            os.close(os.open(inside, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            overlap = False
        except FileExistsError:
            overlap = True
        time.sleep(0.02)
        if not overlap:
            inside.unlink()
        record = {
            "pid": os.getpid(), "entered": entered, "left": time.monotonic(),
            "overlap": overlap, "took_over": lock.taken_over and lock.taken_over.pid,
        }
    with log.open("a") as handle:
        handle.write(json.dumps(record) + "\\n")
    """
)


@pytest.fixture
def box(sandbox: Sandbox) -> Sandbox:
    box = quiet(sandbox)
    applied(box)
    return box


def lock_file(box: Sandbox) -> Path:
    return box.install / ".git/patchkeeper/lock"


def hold(box: Sandbox, mode: str) -> subprocess.Popen[str]:
    """A real process holding the install lock (MODE: seconds to hold, or `die` by SIGKILL)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(box.install / ".git/patchkeeper"), mode],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def test_a_slow_live_owner_is_busy_never_taken_over(box: Sandbox) -> None:
    holder = hold(box, "30")
    try:
        before = lock_file(box).read_text()
        started = time.monotonic()
        proc = pk(box, "apply", "--wait", "1")
        waited = time.monotonic() - started
        assert proc.returncode == 6, proc.stdout + proc.stderr
        assert waited >= 1.0
        assert f"pid {holder.pid}" in proc.stderr and "phase slow-phase" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
        for command in ("update", "unapply", "recover"):
            assert pk(box, command).returncode == 6, command
        assert lock_file(box).read_text() == before  # still the holder's, untouched
        assert holder.poll() is None
    finally:
        holder.kill()
        holder.wait()


def test_a_lock_left_by_a_killed_run_is_taken_over_and_reported(box: Sandbox) -> None:
    holder = hold(box, "die")
    holder.wait()
    assert holder.returncode == -signal.SIGKILL
    assert json.loads(lock_file(box).read_text())["pid"] == holder.pid  # the record stays
    box.publish("v2026.10.1")
    code, doc = pk_json(box, "update")
    assert code == 0, doc["attention"]
    assert any(f"stale lock from dead pid {holder.pid}" in note for note in doc["notes"])
    assert lock_file(box).read_text() == ""  # released: the file stays, naming nobody


def test_a_pid_reused_by_another_process_is_not_the_owner(box: Sandbox) -> None:
    """Our own pid is alive, but nobody holds the lock and the start time differs: taken."""
    lock_file(box).parent.mkdir(parents=True, exist_ok=True)
    lock_file(box).write_text(json.dumps({
        "pid": os.getpid(), "start_time": "1", "command": "update", "phase": "upstream",
        "since": time.time() - 5,
    }))  # fmt: skip
    assert process_start_time(os.getpid()) not in (None, "", "1")
    proc = pk(box, "apply")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"took over a stale lock from dead pid {os.getpid()}" in proc.stdout


def test_an_unreadable_lock_file_nobody_holds_is_provably_free_and_taken(box: Sandbox) -> None:
    """Garbage in a lock file no process holds (flock granted) names nobody: the lock is free."""
    lock_file(box).parent.mkdir(parents=True, exist_ok=True)
    lock_file(box).write_text("{not json")
    proc = pk(box, "apply")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "took over" not in proc.stdout  # there was no owner to name
    assert lock_file(box).read_text() == ""


def test_an_unreadable_lock_file_that_is_held_is_busy(box: Sandbox) -> None:
    """flock says held: an unreadable record is never a reason to take the lock."""
    path = lock_file(box)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_RAW, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        proc = pk(box, "apply", "--wait", "0.3")
        assert proc.returncode == 6, proc.stdout + proc.stderr
        assert "busy" in proc.stderr and "unreadable" in proc.stderr
        assert path.read_text() == "{not json"
    finally:
        holder.kill()
        holder.wait()


def test_two_concurrent_updates_one_runs_the_other_is_busy(box: Sandbox, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    set_command(box, ["sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.05; done; "
                      "exec ./hermes update --yes"])  # fmt: skip
    box.publish("v2026.10.1")
    first = subprocess.Popen(
        [sys.executable, "-m", "patchkeeper", "update", "--json", "--patches", str(box.patches)],
        env={**box.hermes_env(), **GIT_ID},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while '"upstream"' not in (lock_file(box).read_text() if lock_file(box).exists() else ""):
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.05)
        second = pk(box, "update")
        assert second.returncode == 6, second.stdout + second.stderr
        assert f"pid {first.pid} (update, phase upstream" in second.stderr
    finally:
        gate.touch()
        out, _ = first.communicate(timeout=60)
    assert first.returncode == 0, out
    assert git(box.install, "rev-parse", "HEAD") == git(box.origin, "rev-parse", "v2026.10.1^{}")
    assert pk(box, "status").returncode == 0


@pytest.mark.parametrize("round_", range(3))
def test_racers_against_a_dead_owners_lock_never_overlap(
    box: Sandbox, tmp_path: Path, round_: int
) -> None:
    """Several processes see a kill -9'd owner's lock at once: one holder at a time, always."""
    dead = hold(box, "die")
    dead.wait()
    gate, inside, log = tmp_path / "gate", tmp_path / "inside", tmp_path / "log"
    state_dir = box.install / ".git/patchkeeper"
    racers = [
        subprocess.Popen([sys.executable, "-c", RACER, *map(str, (state_dir, gate, inside, log))])
        for _ in range(RACERS)
    ]
    time.sleep(0.5)  # let every racer reach the gate
    gate.touch()
    for racer in racers:
        assert racer.wait(timeout=60) == 0
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(records) == RACERS
    assert not [r["pid"] for r in records if r["overlap"]]
    spans = sorted((r["entered"], r["left"]) for r in records)
    assert all(left <= entered for (_, left), (entered, _) in pairwise(spans))
    # The dead owner is taken over (and reported) exactly once; the rest found it released.
    assert [r["took_over"] for r in records if r["took_over"]] == [dead.pid]
    assert lock_file(box).read_text() == ""
