"""Crash safety: kill -9 `update` at every phase boundary, then `recover`; nothing may be lost.

PATCHKEEPER_STOP_AT_PHASE=N makes patchkeeper SIGKILL itself right after the journal records
that phase N starts: no clean-up runs, the lock file stays behind, exactly like a power cut.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from patchkeeper.demo.sandbox import Sandbox
from patchkeeper.install.records.update_journal import PHASES, UPSTREAM_PHASE
from patchkeeper.install.system.liveness import group_alive, process_start_time
from tests.helpers import GIT_ID, git
from tests.test_update import (
    USER_README,
    applied,
    journal_file,
    patch_presence,
    pk,
    pk_json,
    quiet,
    run_refs,
    set_command,
    user_edits_present,
    with_user_edits,
)

ADOPTION_VARIANT = "adoption-retry/scheduler-0.21.patch"  # upstream's one layout
NOTHING_TO_DO = ("already-applied", "upstream-has-it")
PENDING = ("applied", "applied-offset", "merged-3way")
SQLITE_UTIL_EDIT = "\n# operator: keep WAL files on the fast disk\n"


@pytest.fixture
def box(sandbox: Sandbox) -> Sandbox:
    box = quiet(sandbox)
    applied(box)
    with_user_edits(box)
    with (box.install / "hermes_cli/sqlite_util.py").open("a") as handle:
        handle.write(SQLITE_UTIL_EDIT)
    box.publish("v2026.10.1")
    return box


# Upstream's own from 0.21.3 on: the box (0.21.3 -> 0.22.0) never carries them, and `status`
# must say upstream-has-it at either end of every crash.
UPSTREAMS_OWN = ("heartbeat-fence",)


def variants(box: Sandbox) -> dict[str, str]:
    """Each carried patch's variant (one each, whatever the version the install is at now)."""
    del box
    return {"adoption-retry": ADOPTION_VARIANT, "schema-once": "schema-once.patch"}


def all_edits_present(box: Sandbox) -> bool:
    util = (box.install / "hermes_cli/sqlite_util.py").read_text()
    return user_edits_present(box) and util.endswith(SQLITE_UTIL_EDIT)


def assert_truthful_status(box: Sandbox, *, update_missed: bool = False) -> dict[str, str]:
    """Each patch fully applied or fully absent, and `status` says which; with UPDATE_MISSED
    (the update asked for never ran) it is never 0 either."""
    code, doc = pk_json(box, "status")
    if update_missed:
        assert code == 5 and "did not happen" in doc["notes"][0] and "retry" in doc["notes"][0]
        code = 0
    presence = {name: patch_presence(box, variant) for name, variant in variants(box).items()}
    assert {r["name"] for r in doc["patches"]} == {*presence, *UPSTREAMS_OWN}
    for result in doc["patches"]:
        if result["name"] in UPSTREAMS_OWN:
            assert result["outcome"] == "upstream-has-it", result
            continue
        seen = presence[result["name"]]
        assert seen != "partial", result
        assert result["outcome"] in (NOTHING_TO_DO if seen == "present" else PENDING), result
    assert code == (0 if set(presence.values()) == {"present"} else 5)
    return presence


@pytest.mark.parametrize("phase", range(1, len(PHASES) + 1), ids=lambda n: f"{n}-{PHASES[n - 1]}")
def test_kill_at_every_phase_boundary_then_recover(box: Sandbox, phase: int) -> None:
    old = git(box.install, "rev-parse", "HEAD")
    new = git(box.origin, "rev-parse", "v2026.10.1^{}")
    preview = ["--preview", "origin/main"] if PHASES[phase - 1] == "preview" else []
    killed = pk(box, "update", *preview, env={"PATCHKEEPER_STOP_AT_PHASE": str(phase)})
    assert killed.returncode == -signal.SIGKILL
    assert journal_file(box).exists()

    code, doc = pk_json(box, "recover")
    expected = "old" if phase <= UPSTREAM_PHASE else "new"
    # Back at the old version, the update asked for never ran: never 0, and its retry said.
    assert code == (5 if expected == "old" else 0), doc
    assert doc["direction"] == expected
    if expected == "old":
        assert "did not happen" in doc["meaning"] and "retry: " in doc["meaning"]
    assert git(box.install, "rev-parse", "HEAD") == (old if expected == "old" else new)
    assert all_edits_present(box)
    missed = expected == "old"
    assert set(assert_truthful_status(box, update_missed=missed).values()) == {"present"}
    assert git(box.install, "stash", "list") == ""
    assert run_refs(box) == "" and not journal_file(box).exists()
    assert (box.install / ".git/patchkeeper/lock").read_text() == ""  # released: nobody holds it

    code, doc = pk_json(box, "update")  # the install is usable again, and ends up updated
    assert code == 0, doc["attention"]
    assert git(box.install, "rev-parse", "HEAD") == new and all_edits_present(box)


INSIDE = {
    "3.1": "old",  # snapshot ref written, nothing else
    "3.2": "old",  # edits ref written
    "3.3": "old",  # patchkeeper's record cleared, tree not yet cleaned
    "3.4": "old",  # tree cleaned, index not yet reset
    "4.1": "new",  # the upstream command finished, its exit not yet recorded
    "6.1": "new",  # patches written and recorded, leftovers not yet settled
    "7.1": "new",  # edits merged back, their ref not yet deleted
}


@pytest.mark.parametrize("point", sorted(INSIDE))
def test_kill_inside_a_phase_then_recover(box: Sandbox, point: str) -> None:
    killed = pk(box, "update", env={"PATCHKEEPER_STOP_AT_PHASE": point})
    assert killed.returncode == -signal.SIGKILL
    code, doc = pk_json(box, "recover")
    missed = INSIDE[point] == "old"
    assert (code, doc["direction"]) == (5 if missed else 0, INSIDE[point]), doc
    tag = "v2026.9.14" if INSIDE[point] == "old" else "v2026.10.1"
    assert git(box.install, "rev-parse", "HEAD") == git(box.origin, "rev-parse", f"{tag}^{{}}")
    assert all_edits_present(box)
    assert set(assert_truthful_status(box, update_missed=missed).values()) == {"present"}
    assert git(box.install, "stash", "list") == "" and run_refs(box) == ""


def test_recover_without_an_unfinished_update_does_nothing(box: Sandbox) -> None:
    code, doc = pk_json(box, "recover")
    assert (code, doc["direction"]) == (0, "nothing")


def test_recover_takes_over_the_lock_of_the_killed_run(box: Sandbox) -> None:
    pk(box, "update", env={"PATCHKEEPER_STOP_AT_PHASE": "6"})
    owner = json.loads((box.install / ".git/patchkeeper/lock").read_text())
    proc = pk(box, "recover")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"took over the lock of dead pid {owner['pid']}" in proc.stdout
    assert "phase 6 (apply)" in proc.stdout
    assert "the install is at the new version" in proc.stdout


def _wait_for(predicate, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def _start_update(box: Sandbox) -> subprocess.Popen[bytes]:
    """`patchkeeper update` in the background, returned once its updater has started."""
    update = subprocess.Popen(
        [sys.executable, "-m", "patchkeeper", "update", "--patches", str(box.patches)],
        env={**box.hermes_env(), **GIT_ID},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    journal = journal_file(box)
    _wait_for(lambda: journal.exists() and json.loads(journal.read_text())["upstream_pgid"])
    return update


def test_recover_never_takes_a_running_upstream_command_for_dead(box: Sandbox, tmp_path) -> None:
    gate = tmp_path / "gate"
    # The updater prints after patchkeeper died: it writes into patchkeeper's log file, never
    # into a pipe nobody reads (which would kill it half-way through).
    set_command(box, ["sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.05; done; "
                      "exec ./hermes update --yes"])  # fmt: skip
    update = _start_update(box)
    journal = journal_file(box)
    pgid = json.loads(journal.read_text())["upstream_pgid"]
    os.kill(update.pid, signal.SIGKILL)  # patchkeeper dies; its upstream command does not
    update.wait()

    busy = pk(box, "recover")
    assert busy.returncode == 6, busy.stdout + busy.stderr
    assert f"process group {pgid}" in busy.stderr and "still running" in busy.stderr
    assert journal.exists()

    gate.touch()
    _wait_for(lambda: not group_alive(pgid))
    code, doc = pk_json(box, "recover")
    assert (code, doc["direction"]) == (0, "new"), doc
    assert git(box.install, "rev-parse", "HEAD") == git(box.origin, "rev-parse", "v2026.10.1^{}")
    assert all_edits_present(box)
    assert set(assert_truthful_status(box).values()) == {"present"}


@pytest.mark.parametrize("helper_name", ["sleep", "git"])
def test_a_helper_left_in_the_updaters_group_does_not_keep_recover_busy(
    box: Sandbox, tmp_path: Path, helper_name: str
) -> None:
    """The updater (the group's leader) has ended; a helper it started in its group runs on.

    A daemon is named and left alone; a git (here a copy of `sleep` named git) may still be
    changing the install, so recover stays busy until it ends.
    """
    gate, helper_file = tmp_path / "gate", tmp_path / "helper.pid"
    helper_bin = tmp_path / "bin" / helper_name
    helper_bin.parent.mkdir()
    shutil.copy2(shutil.which("sleep") or "/bin/sleep", helper_bin)
    script = (
        f"{helper_bin} 300 & echo $! > {helper_file}; "
        f"while [ ! -e {gate} ]; do sleep 0.05; done; "
        f"exec ./hermes update --yes > {tmp_path / 'updater.log'} 2>&1"
    )
    set_command(box, ["sh", "-c", script])
    update = _start_update(box)
    journal = journal_file(box)
    _wait_for(lambda: helper_file.exists() and helper_file.read_text().strip())
    recorded = json.loads(journal.read_text())
    pgid, helper = recorded["upstream_pgid"], int(helper_file.read_text())
    assert recorded["upstream_start_time"] == process_start_time(pgid)
    os.kill(update.pid, signal.SIGKILL)  # patchkeeper dies; its upstream command does not
    update.wait()
    try:
        gate.touch()
        _wait_for(lambda: process_start_time(pgid) is None)  # the leader has ended...
        assert group_alive(pgid) and os.getpgid(helper) == pgid  # ...its helper has not
        if helper_name == "git":
            busy = pk(box, "recover")
            assert busy.returncode == 6 and f"git (pids {helper})" in busy.stderr
            assert journal_file(box).exists()  # nothing decided yet
            return

        code, doc = pk_json(box, "recover")
        assert (code, doc["direction"]) == (0, "new"), doc
        (note,) = [a for a in doc["actions"] if f"process group {pgid}" in a]
        assert f"pids {helper}" in note and "still run" in note
        assert process_start_time(helper) is not None  # named, left alone
        assert git(box.install, "rev-parse", "HEAD") == git(
            box.origin, "rev-parse", "v2026.10.1^{}"
        )
        assert all_edits_present(box)
        assert set(assert_truthful_status(box).values()) == {"present"}
    finally:
        os.kill(helper, signal.SIGKILL)


def test_an_updater_that_leaves_a_merge_that_is_given_up_did_not_update(box: Sandbox) -> None:
    set_command(box, ["sh", "-c", "git rev-parse HEAD > .git/MERGE_HEAD"])
    code, doc = pk_json(box, "update")
    assert code == 5 and doc["finished"] is False
    assert {p["name"]: p["status"] for p in doc["phases"]}["apply"] == "skipped"
    assert any("middle of a merge" in item for item in doc["attention"])
    assert journal_file(box).exists() and run_refs(box)  # the edits wait in their ref
    assert pk(box, "update").returncode == 5  # refuses: points at recover

    (box.install / ".git/MERGE_HEAD").unlink()  # the operator gives the merge up
    code, doc = pk_json(box, "recover")  # HEAD never moved: the update did not happen
    assert (code, doc["direction"]) == (5, "old"), doc
    assert "did not happen" in doc["meaning"]
    assert all_edits_present(box)
    assert {patch_presence(box, v) for v in variants(box).values()} == {"present"}
    assert run_refs(box) == "" and not journal_file(box).exists()


def test_rolling_back_keeps_edits_made_after_the_crash(box: Sandbox) -> None:
    pk(box, "update", env={"PATCHKEEPER_STOP_AT_PHASE": "4"})
    (box.install / "after-crash.txt").write_text("written while patchkeeper was dead\n")
    code, doc = pk_json(box, "recover")
    assert (code, doc["direction"]) == (5, "old"), doc  # 5: the update never ran
    assert all_edits_present(box) and (box.install / "after-crash.txt").is_file()
    assert set(assert_truthful_status(box, update_missed=True).values()) == {"present"}


def test_rolling_back_over_a_conflicting_later_edit_keeps_both(box: Sandbox) -> None:
    pk(box, "update", env={"PATCHKEEPER_STOP_AT_PHASE": "4"})
    readme = box.install / "README.md"
    readme.write_text(readme.read_text() + "\nA different line, written after the crash.\n")
    code, doc = pk_json(box, "recover")
    assert (code, doc["direction"]) == (5, "old"), doc
    assert readme.read_text().endswith("written after the crash.\n")  # left as it is
    (ref,) = run_refs(box).splitlines()
    assert ref.endswith("/before")
    assert git(box.install, "show", f"{ref}:README.md").endswith(USER_README.strip())
    assert any("README.md" in action for action in doc["actions"])
