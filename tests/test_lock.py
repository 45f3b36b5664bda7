"""One patchkeeper per install, with real processes: busy is not dead, dead is proven.

A live owner, however slow, is never taken over (exit 6 naming its pid, start and phase); a
lock whose owner was killed (pid gone) or whose pid now belongs to another process (another
start time) is taken over, and that is reported.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from patchkeeper.demo.sandbox import Sandbox
from patchkeeper.lock import process_start_time
from tests.helpers import GIT_ID, git
from tests.test_update import applied, pk, pk_json, quiet, set_command

HOLDER = textwrap.dedent(
    """
    import os, signal, sys, time
    from pathlib import Path
    from patchkeeper.lock import install_lock
    state_dir, mode = Path(sys.argv[1]), sys.argv[2]
    with install_lock(state_dir, "holder") as lock:
        lock.set_phase("slow-phase")
        print("held", flush=True)
        if mode == "die":
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(float(mode))
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
    assert holder.returncode == -signal.SIGKILL and lock_file(box).exists()
    box.publish("v0.22.0")
    code, doc = pk_json(box, "update")
    assert code == 0, doc["attention"]
    assert any(f"stale lock from dead pid {holder.pid}" in note for note in doc["notes"])
    assert not lock_file(box).exists()


def test_a_pid_reused_by_another_process_is_not_the_owner(box: Sandbox) -> None:
    """Our own pid is alive, but with another start time it is provably not the owner."""
    lock_file(box).parent.mkdir(parents=True, exist_ok=True)
    lock_file(box).write_text(json.dumps({
        "pid": os.getpid(), "start_time": "1", "command": "update", "phase": "upstream",
        "since": time.time() - 5,
    }))  # fmt: skip
    assert process_start_time(os.getpid()) not in (None, "", "1")
    proc = pk(box, "apply")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"took over a stale lock from dead pid {os.getpid()}" in proc.stdout


def test_an_unreadable_lock_is_never_taken(box: Sandbox) -> None:
    lock_file(box).write_text("{not json")
    proc = pk(box, "apply")
    assert proc.returncode == 6 and "unreadable" in proc.stderr
    assert lock_file(box).read_text() == "{not json"


def test_two_concurrent_updates_one_runs_the_other_is_busy(box: Sandbox, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    set_command(box, ["sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.05; done; "
                      "exec ./hermes update --yes"])  # fmt: skip
    box.publish("v0.22.0")
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
    assert git(box.install, "rev-parse", "HEAD") == git(box.origin, "rev-parse", "v0.22.0^{}")
    assert pk(box, "status").returncode == 0
