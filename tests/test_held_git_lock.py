"""A git lock file a live process holds when `update` starts: busy (exit 6), nothing changed.

The updater would fail on it (git refuses to take a held `index.lock`), after phase 3 had
taken the patches out and set the edits aside: the run then stopped at phase 5 with the fixes
out of the tree and an unfinished update for `recover`, for a cause that was there before it
began. One nobody holds any more (its holder died) is removed, and the update runs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tests.test_exit_zero import (
    HOLDER,
    World,
    applied_with_edits,
    pk,
    pk_json,
    release_2,
    work_tree,
    world,
)

__all__ = ["world"]  # the fixture, used by name


def test_an_update_with_a_held_index_lock_changes_nothing(world: World) -> None:
    w = world
    applied_with_edits(w)
    release_2(w)
    old, before = w.head(), work_tree(w)
    script, pid_file = w.root / "holder.py", w.root / "holder.pid"
    script.write_text(HOLDER)
    holder = subprocess.Popen(
        [sys.executable, str(script), str(w.install), str(pid_file)], cwd=w.root
    )
    try:
        while not pid_file.exists():
            assert holder.poll() is None
            time.sleep(0.02)
        code, doc = pk_json(w, "update")
        assert code == 6, doc
        assert w.head() == old and work_tree(w) == before  # the fix and the edits in place
        assert not (w.install / ".git/patchkeeper/journal.json").exists()
        said = pk(w, "update").stderr
        assert f"index.lock is held by pid {holder.pid}" in said and "nothing was changed" in said
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    # Its holder died and left it: nobody holds it now, so the update removes it and runs
    # (the updater, a `git pull`, would have failed on it: a rollback, exit 5).
    assert (w.install / ".git/index.lock").exists()
    code, doc = pk_json(w, "update")
    assert code == 0, (doc, pk(w, "update").stderr)
    assert w.head() == w.tip()
    assert any("removed" in note and "index.lock" in note for note in doc["notes"]), doc
