"""`status` while an update runs says so: the update is running (its process holds the lock),
never "stopped in phase N ... run `patchkeeper recover`", which names a crash that did not
happen (and `recover` would only say busy). Once it is killed, the same note says stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tests.test_exit_zero import World, pk_json, release_2, wait_until_gone, world

__all__ = ["world"]  # the fixture, used by name


def test_status_says_a_running_update_runs_and_a_killed_one_stopped(world: World) -> None:
    w = world
    started, go = w.root / "updater-started", w.root / "go"
    w.set_updater(
        f"""
open({str(started)!r}, "w").close()
deadline = time.monotonic() + 30
while not os.path.exists({str(go)!r}) and time.monotonic() < deadline:
    time.sleep(0.05)
"""
    )
    release_2(w)
    argv = [sys.executable, "-m", "patchkeeper", "update"]
    argv += ["--install", str(w.install), "--patches", str(w.patches)]
    update = subprocess.Popen(
        argv, env=w.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 30
        while not started.exists():
            assert time.monotonic() < deadline and update.poll() is None
            time.sleep(0.05)
        code, doc = pk_json(w, "status")
        assert code == 5, doc
        note = doc["notes"][0]
        assert "is running, held by pid" in note and f"pid {update.pid}" in note, note
        assert "stopped" not in note and "recover" not in note, note
        os.kill(update.pid, signal.SIGKILL)  # a crash: now it did stop
        update.wait()
        go.touch()  # the updater it left ends too
        wait_until_gone(update.pid)
        code, doc = pk_json(w, "status")
        assert code == 5 and "stopped in phase 4 (upstream)" in doc["notes"][0], doc["notes"]
        assert "patchkeeper recover" in doc["notes"][0]
    finally:
        go.touch()
        if update.poll() is None:
            update.kill()
        update.wait()
