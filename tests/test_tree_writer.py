"""The work tree writer (worktree_writer.py): an interrupted write is told from an edit, undone
by the next command, never reported green; the machine's refusals (disk full) are one line,
exit 7, with nothing half-written.

The fixture is kill_sweep's from-scratch upstream, install and two patches, with a tracked
edit, an untracked file and an edit to a patched file in place.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.benchmarks.kill_sweep import (
    GIT_ID,
    PATCHES,
    Fixture,
    build,
    check,
    copy,
    disk_full_point,
    git,
)

APPLY_STATE = ".git/patchkeeper/applied.json"


def pk(fixture: Fixture, *args: str, stop: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **GIT_ID, "NO_COLOR": "1"}
    if stop:
        env["PATCHKEEPER_STOP_AT_PHASE"] = stop
    command = [sys.executable, "-m", "patchkeeper", *args]
    command += ["--install", str(fixture.install), "--patches", str(fixture.patches)]
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False)


def pk_json(fixture: Fixture, *args: str) -> tuple[int, dict]:
    proc = pk(fixture, *args, "--json")
    return proc.returncode, json.loads(proc.stdout)


def add_patch(fixture: Fixture, name: str, text: str) -> None:
    (fixture.patches / f"{name}.patch").write_text(text)
    with (fixture.patches / "series").open("a") as series:
        series.write(f"{name}.patch\n")


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Fixture]:
    root = tmp_path_factory.mktemp("writer")
    return {command: build(root / command, command) for command in ("apply", "update")}


def test_apply_killed_between_two_files_is_never_green_and_the_next_apply_undoes_it(
    templates: dict[str, Fixture], tmp_path: Path
) -> None:
    fixture = copy(templates["apply"], tmp_path / "box")
    killed = pk(fixture, "apply", stop="write.1")
    assert killed.returncode == -signal.SIGKILL
    assert (fixture.install / ".git/patchkeeper/tree-write.json").is_file()
    status = pk(fixture, "status")
    assert status.returncode == 5 and "was interrupted" in status.stdout
    leftovers = pk(fixture, "leftovers")
    assert leftovers.returncode == 5 and "was interrupted" in leftovers.stdout

    again = pk(fixture, "apply")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "an interrupted write of `apply` was undone: 1 file(s)" in again.stdout
    verdict = check(fixture, recover=False)
    assert verdict.recovered, verdict
    assert not list(fixture.install.rglob(".patchkeeper-*"))


def test_a_file_edited_after_the_crash_is_kept_and_its_old_content_listed(
    templates: dict[str, Fixture], tmp_path: Path
) -> None:
    fixture = copy(templates["apply"], tmp_path / "box")
    assert pk(fixture, "apply", stop="write.1").returncode == -signal.SIGKILL
    written = next(  # the one path the killed write had put in place
        path
        for name in PATCHES
        for path in PATCHES[name]
        if (fixture.install / path).is_file() and "fixed" in (fixture.install / path).read_text()
    )
    target = fixture.install / written
    target.write_text(target.read_text() + "# written by hand after the crash\n")

    code, doc = pk_json(fixture, "recover")
    assert code == 5, doc
    (said,) = [action for action in doc["actions"] if "left as they are" in action]
    assert written in said and "patchkeeper leftovers restore " in said
    assert target.read_text().endswith("after the crash\n")  # never taken for ours
    code, listed = pk_json(fixture, "leftovers")
    (item,) = [i for i in listed["leftovers"] if "interrupted" in i["label"]]
    assert code == 5 and written in item["files"]
    # Its old content (HEAD's, with the operator's edit) is all in the file still: the merge
    # has nothing to add, and the leftover is settled.
    restored = pk(fixture, "leftovers", "restore", item["id"])
    assert restored.returncode == 0, restored.stdout
    assert target.read_text().endswith("after the crash\n")
    assert pk_json(fixture, "leftovers")[1]["leftovers"] == []


def test_leftovers_is_never_0_while_an_update_is_unfinished(
    templates: dict[str, Fixture], tmp_path: Path
) -> None:
    fixture = copy(templates["update"], tmp_path / "box")
    assert pk(fixture, "update", stop="6").returncode == -signal.SIGKILL
    assert git(fixture.install, "for-each-ref", "refs/patchkeeper/")  # the edits are in refs
    proc = pk(fixture, "leftovers")
    assert proc.returncode == 5 and "unfinished" in proc.stdout, proc.stdout
    code, _ = pk_json(fixture, "leftovers")
    assert code == 5


def test_a_kept_snapshot_of_an_update_is_a_leftover_until_settled(
    templates: dict[str, Fixture], tmp_path: Path
) -> None:
    fixture = copy(templates["update"], tmp_path / "box")
    assert pk(fixture, "update", stop="4").returncode == -signal.SIGKILL
    readme = fixture.install / "README.md"
    readme.write_text(readme.read_text() + "Another line, written after the crash.\n")
    code, doc = pk_json(fixture, "recover")
    assert code == 5 and doc["direction"] == "old", doc
    code, listed = pk_json(fixture, "leftovers")
    assert code == 5 and any(i["label"].endswith("/before") for i in listed["leftovers"])


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
@pytest.mark.parametrize("command", ["apply", "update"])
def test_disk_full_at_any_write_is_one_line_exit_7_and_nothing_half_written(
    templates: dict[str, Fixture], command: str, tmp_path: Path
) -> None:
    """ENOSPC injected (strace) into patchkeeper's own Nth write(), N sampled every 7th."""
    failed = {}
    for n in range(2, 40, 7):
        verdict = disk_full_point(templates[command], command, n, tmp_path)
        if not verdict.recovered:
            failed[n] = [*verdict.lost, *verdict.torn, *verdict.wrong_exit]
    assert not failed


def test_a_chatty_updater_leaves_a_capped_log(
    templates: dict[str, Fixture], tmp_path: Path
) -> None:
    fixture = copy(templates["update"], tmp_path / "box")
    chatty = "import sys\nfor n in range(40000): print(f'line {n} ' + 'x' * 60)\n"
    (fixture.root / "chatty.py").write_text(chatty)
    config = fixture.patches / "patchkeeper.toml"
    config.write_text(f'[update]\ncommand = ["{sys.executable}", "{fixture.root / "chatty.py"}"]\n')
    proc = pk(fixture, "update")
    assert proc.returncode == 0, proc.stdout
    (log,) = (fixture.install / ".git/patchkeeper/updates").glob("*/upstream.log")
    text = log.read_bytes()
    assert len(text) <= (1 << 20) + 100  # 2.7 MB printed
    assert text.startswith(b"[patchkeeper: the first ") and text.endswith(
        b"line 39999 " + b"x" * 60 + b"\n"
    )


IGNORED_PATCH = """Description: a generated module the install ignores, and its user
Smoke: none (a test fixture)
---
diff --git a/app/b.py b/app/b.py
--- a/app/b.py
+++ b/app/b.py
@@ -19,3 +19,3 @@ line 18
 line 19
-line 20
+line 20 uses cache.gen
 line 21
diff --git a/app/cache.gen b/app/cache.gen
new file mode 100644
--- /dev/null
+++ b/app/cache.gen
@@ -0,0 +1 @@
+GENERATED = 1
"""


def test_a_patch_that_creates_an_ignored_file_is_carried_across_an_update(
    templates: dict[str, Fixture], tmp_path: Path
) -> None:
    fixture = copy(templates["update"], tmp_path / "box")
    (fixture.install / ".git/info/exclude").write_text("*.gen\n")
    add_patch(fixture, "ignored", IGNORED_PATCH)
    assert pk(fixture, "apply").returncode == 0
    assert (fixture.install / "app/cache.gen").read_text() == "GENERATED = 1\n"
    code, doc = pk_json(fixture, "update")
    assert code == 0, doc["attention"]
    assert {p["name"]: p["outcome"] for p in doc["patches"]}["ignored"] == "applied"
    assert (fixture.install / "app/cache.gen").read_text() == "GENERATED = 1\n"
    assert check(fixture, recover=False).recovered


LINKED_PATCH = """Description: a fix named through a symlinked folder
Smoke: none (a test fixture)
---
diff --git a/alias/b.py b/alias/b.py
--- a/alias/b.py
+++ b/alias/b.py
@@ -11,3 +11,3 @@ line 10
 line 11
-line 12
+line 12 fixed through the alias
 line 13
"""


@pytest.mark.parametrize("command", ["status", "apply", "update"])
def test_a_patch_path_through_a_symlinked_folder_is_one_line_exit_2_and_changes_nothing(
    templates: dict[str, Fixture], command: str, tmp_path: Path
) -> None:
    fixture = copy(templates["update"], tmp_path / "box")
    (fixture.install / "alias").symlink_to("app")
    git(fixture.install, "add", "alias")
    git(fixture.install, "commit", "-q", "-m", "an alias the operator keeps")
    add_patch(fixture, "linked", LINKED_PATCH)
    before = {p: p.read_bytes() for p in fixture.install.rglob("*") if p.is_file()}
    proc = pk(fixture, command)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = [line for line in proc.stderr.splitlines() if "error" in line]
    assert "'alias/b.py' goes through the symbolic link 'alias'" in line and "app/b.py" in line
    after = {p: p.read_bytes() for p in fixture.install.rglob("*") if p.is_file()}
    changed = [p for p in set(before) | set(after) if before.get(p) != after.get(p)]
    assert [p for p in changed if "/.git/" not in str(p)] == []
    assert not (fixture.install / ".git/patchkeeper/journal.json").exists()


def test_a_release_that_makes_a_patched_folder_a_symlink_ends_the_update_3_not_stuck(
    templates: dict[str, Fixture], tmp_path: Path
) -> None:
    fixture = copy(templates["apply"], tmp_path / "box")
    upstream = fixture.root / "upstream"
    git(fixture.install, "remote", "set-url", "origin", str(upstream))  # the copy's own
    (upstream / "alias").mkdir()
    (upstream / "alias/b.py").write_text((upstream / "app/b.py").read_text())
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "alias as a folder")
    git(fixture.install, "pull", "-q", "--ff-only")
    add_patch(fixture, "linked", LINKED_PATCH)
    applied = pk(fixture, "apply")
    assert applied.returncode == 0, applied.stdout
    git(upstream, "rm", "-q", "-r", "alias")
    (upstream / "alias").symlink_to("app")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "alias as a symlink")

    code, doc = pk_json(fixture, "update")
    assert code == 3, doc
    assert any("goes through the symbolic link 'alias'" in line for line in doc["attention"])
    assert not (fixture.install / ".git/patchkeeper/journal.json").exists()  # finished
    assert git(fixture.install, "rev-parse", "HEAD") == git(upstream, "rev-parse", "HEAD")
    assert pk_json(fixture, "recover")[0] == 0  # nothing left to recover


@pytest.mark.parametrize("command", ["record", "refresh", "leftovers drop"])
def test_a_file_parked_by_the_undo_is_named_and_never_exit_0(
    templates: dict[str, Fixture], tmp_path: Path, command: str
) -> None:
    """record, refresh and leftovers take the lock, which undoes an interrupted write: a file
    the user changed since is parked under refs/patchkeeper/interrupted/, so they say so, 5."""
    fixture = copy(templates["apply"], tmp_path / "box")
    # a parked stash: a leftover for `leftovers drop` to act on
    git(fixture.install, "stash", "push", "-q", "-m", "hermes-update-autostash-20261201")
    (stash,) = pk_json(fixture, "leftovers")[1]["leftovers"]
    git(fixture.install, "stash", "apply", "-q")
    assert pk(fixture, "apply", stop="write.1").returncode == -signal.SIGKILL
    target = fixture.install / "app/a.py"  # the first file the killed write put in place
    assert "line 5 fixed" in target.read_text()
    target.write_text(target.read_text() + "# written by hand after the crash\n")
    args = {
        "record": ["record", "p3", "--path", "app/a.py", "-m", "A fix"],
        "refresh": ["refresh", "p1"],
        "leftovers drop": ["leftovers", "drop", stash["id"]],
    }[command]
    proc = pk(fixture, *args)
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert "note: an interrupted write of `apply` was undone" in proc.stdout
    assert "changed since, so left as they are: app/a.py" in proc.stdout
    assert target.read_text().endswith("after the crash\n")


def test_a_mode_only_patch_is_written_recorded_and_taken_out(tmp_path: Path) -> None:
    """Issue 26 item 6: a patch that only makes a file executable (old mode 100644, new mode
    100755). git apply --cached does not check the mode it starts from, so on a file the
    operator had made executable already apply said "applied, wrote", exit 0, wrote nothing
    and recorded nothing, status said pending (5), and every later apply said 0 again; a mode
    taken back by hand read as still in place. Now: in place is in place, gone is gone, and
    apply, status and the records agree. (100777 and 104755, which git does not keep, are
    refused at load: tests/test_bad_input.py.)"""
    from tests.helpers import make_repo, patch_text, run_cli, write_patch_set

    repo = make_repo(tmp_path / "up", {"run.sh": "echo hi\n"}, tag="v1.0.0")
    mode_only = "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
    patches = write_patch_set(tmp_path / "ps", {"exec.patch": patch_text(mode_only)})
    args = ("--install", repo, "--patches", patches)
    script = repo / "run.sh"
    script.chmod(0o755)  # the operator's chmod, before any apply
    first = run_cli("apply", *args)
    assert first.returncode == 0 and "nothing to write" in first.stdout, first.stdout
    assert "already-applied" in first.stdout
    status = run_cli("status", *args)
    assert status.returncode == 0 and "already-applied" in status.stdout, status.stdout
    script.chmod(0o644)  # taken back by hand: gone, and said so
    gone = run_cli("status", *args)
    assert gone.returncode == 5 and "pending" in gone.stdout, gone.stdout
    again = run_cli("apply", *args)
    assert again.returncode == 0 and "wrote: exec" in again.stdout, again.stdout
    assert os.stat(script).st_mode & 0o111
    assert run_cli("status", *args).returncode == 0
    assert "nothing to write" in run_cli("apply", *args).stdout
    assert run_cli("unapply", *args).returncode == 0
    assert not os.stat(script).st_mode & 0o111
    assert git(repo, "status", "--porcelain") == ""
