"""Exit 0 means every fix is in place: the quiet paths to a false green (issue 8), each closed.

Every test builds a small generic upstream of its own (a repo with two releases), a clone as
the install, a one-patch patch set and a fake updater script, so nothing here depends on the
demo sandbox. Each case ends non-zero with one line naming what is missing and a command that
works when pasted into a shell (it is run here exactly as printed, through shlex).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from patchkeeper.install.checkout import tree_objects as trees
from patchkeeper.install.checkout.install import open_install
from tests.helpers import (
    GIT_ID,
    NO_CHECK,
    commit_files,
    diff_of,
    git,
    make_repo,
    patch_text,
    write_patch_set,
)

LINES = "".join(f"line {n}\n" for n in range(1, 31))
FIXED = LINES.replace("line 10\n", "line 10 fixed\n")
USER_README = "# upstream\n\nA note the operator keeps locally.\n"
USER_FILE = "local-notes.txt"
MODULES = 60  # a release that touches many files, so a half-done checkout leaves many behind

GOOD_UPDATER = """
git("fetch", "-q", "origin")
git("merge", "-q", "--ff-only", "origin/main")
"""


@dataclass
class World:
    root: Path
    upstream: Path
    install: Path
    patches: Path
    updater: Path
    home: Path

    def env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, **GIT_ID, "NO_COLOR": "1", "HERMES_HOME": str(self.home), **extra}

    def set_updater(self, body: str) -> None:
        """The fake upstream updater: a Python script run with cwd at the install."""
        prelude = textwrap.dedent(
            """
            import os, signal, subprocess, sys, time
            def git(*args, check=True):
                return subprocess.run(["git", *args], check=check).returncode
            """
        )
        self.updater.write_text(prelude + textwrap.dedent(body))

    def write_config(self, extra: str = "", python: str | None = sys.executable) -> None:
        lines = ["[install]"] + ([f"python = {json.dumps(python)}"] if python else [])
        lines += [
            "[update]",
            f"command = {json.dumps([sys.executable, str(self.updater)])}",
            "timeout = 60",
        ]
        (self.patches / "patchkeeper.toml").write_text("\n".join(lines) + "\n" + extra)

    def head(self) -> str:
        return git(self.install, "rev-parse", "HEAD")

    def tip(self) -> str:
        return git(self.upstream, "rev-parse", "main")


def _modules(version: int) -> dict[str, str]:
    files = {}
    for n in range(MODULES):
        if version == 2 and n in (0, 1):
            continue  # deleted by release 2
        touched = version == 2 and n % 3 == 0
        files[f"lib/mod_{n:03d}.py"] = f"VALUE = {n}\n" + ("# release 2\n" if touched else "")
    if version == 2:
        files |= {f"lib/new_{n:03d}.py": f"NEW = {n}\n" for n in range(20)}
    return files


@pytest.fixture
def world(tmp_path: Path) -> World:
    upstream = make_repo(
        tmp_path / "upstream",
        {"app.py": LINES, "README.md": "# upstream\n", ".gitignore": "venv/\n", **_modules(1)},
        tag="v1.0.0",
    )
    install = tmp_path / "install"
    git(tmp_path, "clone", "-q", str(upstream), str(install))
    patches = write_patch_set(
        tmp_path / "patches",
        {"fix.patch": patch_text(diff_of(install, {"app.py": FIXED}), "Fix line 10")},
    )
    home = tmp_path / "hermes-home"
    home.mkdir()
    w = World(tmp_path, upstream, install, patches, tmp_path / "updater.py", home)
    w.set_updater(GOOD_UPDATER)
    w.write_config()
    return w


def release_2(w: World) -> str:
    """Upstream releases 2.0.0: many files changed, added and deleted; app.py untouched."""
    for n in (0, 1):
        git(w.upstream, "rm", "-q", f"lib/mod_{n:03d}.py")
    return commit_files(w.upstream, _modules(2), "release 2", tag="v2.0.0")


def pk(w: World, verb: str, *args: str, env: dict[str, str] | None = None):
    argv = [sys.executable, "-m", "patchkeeper", *verb.split()]
    argv += ["--install", str(w.install), "--patches", str(w.patches), *args]
    return subprocess.run(
        argv, capture_output=True, text=True, env={**w.env(), **(env or {})}, check=False
    )


def pk_json(w: World, verb: str, *args: str, **kw: Any) -> tuple[int, dict[str, Any]]:
    proc = pk(w, verb, "--json", *args, **kw)
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def command_in(line: str) -> str:
    """The pasteable command a line ends with."""
    found = re.search(r"(?:^|[:;] )(patchkeeper \S.*)$", line)
    assert found, f"no command in: {line}"
    return found.group(1)


def paste(w: World, command: str) -> subprocess.CompletedProcess[str]:
    """Run COMMAND exactly as a person would paste it into a shell (from another folder)."""
    argv = shlex.split(command)
    assert argv[0] == "patchkeeper", command
    return subprocess.run(
        [sys.executable, "-m", "patchkeeper", *argv[1:]],
        cwd=w.root,
        capture_output=True,
        text=True,
        env=w.env(),
        check=False,
    )


def one_line(lines: list[str], *words: str) -> str:
    found = [line for line in lines if all(word in line for word in words)]
    assert len(found) == 1, (words, lines)
    return found[0]


def applied_with_edits(w: World) -> None:
    proc = pk(w, "apply")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (w.install / "README.md").write_text(USER_README)
    (w.install / USER_FILE).write_text("remember to rotate the keys\n")


def work_tree(w: World) -> dict[str, bytes]:
    """Every file of the work tree (tracked, untracked, ignored) and patchkeeper's record."""
    found = {}
    for path in sorted(w.install.rglob("*")):
        relative = path.relative_to(w.install).as_posix()
        if path.is_file() and (
            not relative.startswith(".git/")
            or relative == ".git/patchkeeper/applied.json"
            or relative.startswith(".git/patchkeeper/written/")
        ):
            found[relative] = path.read_bytes()
    return found


def wait_until_gone(pid: int) -> None:
    deadline = time.monotonic() + 20
    while Path(f"/proc/{pid}").exists() and "Z" not in _state(pid):
        assert time.monotonic() < deadline, f"pid {pid} still runs"
        time.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def killed(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == -signal.SIGKILL, proc.stdout + proc.stderr


# ---------------------------------------------------------------- 2: recover remembers


@pytest.mark.parametrize("failure", ["exit-1", "timeout"])
@pytest.mark.parametrize("phase", ["5", "6", "8"])
def test_recover_after_a_failed_updater_says_the_update_did_not_happen(
    world: World, phase: str, failure: str
) -> None:
    w = world
    applied_with_edits(w)
    release_2(w)
    old, before = w.head(), work_tree(w)
    w.set_updater('git("fetch", "-q", "origin")\n' + (
        "sys.exit(1)\n" if failure == "exit-1" else "time.sleep(60)\n"
    ))  # fmt: skip
    timeout = ["--timeout", "3"] if failure == "timeout" else []  # the retry keeps it
    killed(pk(w, "update", *timeout, env={"PATCHKEEPER_STOP_AT_PHASE": phase}))

    code, doc = pk_json(w, "recover")
    assert code == 5, doc
    assert doc["direction"] == "old" and "new version" not in doc["meaning"]
    assert "did not happen" in doc["meaning"]
    assert w.head() == old and work_tree(w) == before
    line = one_line(doc["attention"], "did not happen")
    retry = command_in(line)

    code, status = pk_json(w, "status")
    assert code == 5, status
    assert command_in(one_line(status["notes"], "did not happen")) == retry

    w.set_updater(GOOD_UPDATER)
    proc = paste(w, retry)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert w.head() == w.tip()
    assert pk(w, "status").returncode == 0


def test_status_is_not_green_after_an_update_that_did_not_happen(world: World) -> None:
    w = world
    applied_with_edits(w)
    release_2(w)
    old = w.head()
    w.set_updater('print("upstream says: boom"); sys.exit(7)\n')
    code, doc = pk_json(w, "update")
    assert code == 5 and doc["update_done"] is False
    retry = command_in(one_line(doc["attention"], "did not happen", "exit 7"))
    assert w.head() == old
    code, status = pk_json(w, "status")
    assert code == 5 and command_in(one_line(status["notes"], "did not happen")) == retry
    doctor = pk(w, "doctor")
    assert doctor.returncode == 5
    assert "the update did not happen: the upstream command failed (exit 7)" in doctor.stdout
    w.set_updater(GOOD_UPDATER)
    assert paste(w, retry).returncode == 0 and w.head() == w.tip()
    assert pk(w, "status").returncode == 0


def test_an_updater_that_leaves_a_merge_that_is_aborted_did_not_update(world: World) -> None:
    w = world
    # A local commit on the install that upstream's release conflicts with.
    commit_files(w.install, {"lib/mod_003.py": "VALUE = 'local'\n"}, "local tweak")
    applied_with_edits(w)
    release_2(w)
    old, before = w.head(), work_tree(w)
    w.set_updater(
        'git("fetch", "-q", "origin")\nsys.exit(git("merge", "origin/main", check=False))'
    )
    code, doc = pk_json(w, "update")
    assert code == 5 and doc["finished"] is False
    assert any("middle of a merge" in item for item in doc["attention"])

    git(w.install, "merge", "--abort")  # the operator gives the merge up
    code, doc = pk_json(w, "recover")
    assert code == 5 and doc["direction"] == "old" and "new version" not in doc["meaning"]
    assert w.head() == old and work_tree(w) == before
    retry = command_in(one_line(doc["attention"], "did not happen"))
    assert "--install" in retry
    code, status = pk_json(w, "status")
    assert code == 5 and any("did not happen" in note for note in status["notes"])


def test_an_updater_that_leaves_unmerged_paths_but_no_merge_stops_before_the_apply(
    world: World,
) -> None:
    """HEAD moved, then a stash pop of the updater's own conflicted: unmerged paths, and no
    MERGE_HEAD or rebase folder to tell. Phase 5 lists them, and the run stops there (blocked
    takes them from that list, asking git no more): nothing is written into the conflict."""
    w = world
    applied_with_edits(w)
    release_2(w)  # changes lib/mod_003.py
    w.set_updater(
        """
open("lib/mod_003.py", "w").write("VALUE = 'updater'\\n")
git("stash", "push", "-q")
git("fetch", "-q", "origin")
git("merge", "-q", "--ff-only", "origin/main")
git("stash", "pop", check=False)
"""
    )
    code, doc = pk_json(w, "update")
    assert code == 5 and doc["finished"] is False and w.head() == w.tip()
    assert any("unmerged paths (lib/mod_003.py)" in item for item in doc["attention"])
    assert [p["status"] for p in doc["phases"]][5:] == ["skipped"] * 5
    assert "line 10 fixed" not in (w.install / "app.py").read_text()  # nothing written
    assert git(w.install, "ls-files", "-u")  # the conflict is left to git


# ---------------------------------------------------------------- 4: the interpreter


def with_smoke_check(w: World, python: str | None) -> None:
    check = w.patches / "smoke" / "ok.py"
    check.parent.mkdir()
    check.write_text('import json\nprint(json.dumps({"check": "ok", "verdict": "pass"}))\n')
    patch = w.patches / "fix.patch"
    patch.write_text(patch.read_text().replace(f"Smoke: {NO_CHECK}", "Smoke: ok", 1))
    w.write_config(python=python)


def test_smoke_with_a_configured_interpreter_that_is_missing_could_not_check(
    world: World,
) -> None:
    w = world
    with_smoke_check(w, "venv/bin/python")
    missing = w.install / "venv/bin/python"
    code, doc = pk_json(w, "smoke")
    assert code == 4, doc
    (check,) = doc["checks"]
    assert check["verdict"] == "error"
    assert f"could not check: interpreter {missing} not found" in check["detail"]
    assert doc["python"]["found"] is False
    text = pk(w, "smoke")
    assert text.returncode == 4
    line = one_line(text.stdout.splitlines(), "could not check: interpreter", "not found")
    assert "ok: could not check" in line

    code, doc = pk_json(w, "update")
    assert code == 4 and doc["smoke"]["status"] == "error", doc["smoke"]
    assert doc["smoke"]["python"]["found"] is False
    line = one_line(doc["attention"], "interpreter", "not found")
    assert str(w.patches / "patchkeeper.toml") in line
    missing.parent.mkdir(parents=True)
    missing.symlink_to(sys.executable)  # the operator creates the venv the config names
    proc = paste(w, command_in(line))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_smoke_under_patchkeepers_own_interpreter_is_noted_and_never_a_pass(
    world: World,
) -> None:
    w = world
    with_smoke_check(w, None)  # no [install] python, and the install has no venv
    code, doc = pk_json(w, "smoke")
    assert code == 4, doc
    assert doc["python"]["source"] == "patchkeeper" and doc["python"]["note"]
    (check,) = doc["checks"]
    assert check["verdict"] == "error" and "patchkeeper's own" in check["detail"]
    text = pk(w, "smoke")
    assert text.returncode == 4
    assert "note: no [install] python set and no venv" in text.stdout

    code, doc = pk_json(w, "update")
    assert code == 4 and doc["smoke"]["status"] == "error"
    assert doc["smoke"]["python"]["source"] == "patchkeeper"
    line = one_line(doc["attention"], "patchkeeper's own")
    assert "[install] python" in line

    venv = w.install / "venv/bin/python"  # the install's own venv (ignored by git)
    venv.parent.mkdir(parents=True)
    venv.symlink_to(sys.executable)
    code, doc = pk_json(w, "smoke")
    assert code == 0 and doc["python"]["source"] == "venv" and not doc["python"]["note"]
    assert paste(w, command_in(line)).returncode == 0


# ---------------------------------------------------------------- 5: leftovers stay listed


def test_a_stash_another_updater_left_is_still_listed_and_restorable(world: World) -> None:
    w = world
    applied_with_edits(w)
    release_2(w)
    w.set_updater(
        GOOD_UPDATER
        + """
with open("settings.local", "w") as handle:
    handle.write("kept by the other updater\\n")
git("stash", "push", "-q", "--include-untracked", "-m", "other-updater: saved local changes")
"""
    )
    code, doc = pk_json(w, "update")
    assert code == 5, doc
    (kept,) = [a for a in doc["leftovers"] if a["action"] == "kept"]
    line = one_line(doc["attention"], kept["id"])
    restore = command_in(line)
    assert restore.startswith(f"patchkeeper leftovers restore {kept['id']} ")

    code, listing = pk_json(w, "leftovers")
    assert code == 5 and [item["id"] for item in listing["leftovers"]] == [kept["id"]]
    code, status = pk_json(w, "status")
    assert code == 5 and any(kept["id"] in note for note in status["notes"])

    proc = paste(w, restore)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (w.install / "settings.local").read_text() == "kept by the other updater\n"
    assert pk(w, "leftovers").returncode == 0
    assert pk(w, "status").returncode == 0


# ---------------------------------------------------------------- 8: a half-done checkout


HALF_CHECKOUT = """
git("fetch", "-q", "origin")
# What a checkout killed half-way leaves: some of the new release's files written, some of
# the old release's files gone, and git's index.lock.
names = subprocess.run(["git", "diff", "--name-only", "HEAD", "origin/main"],
                       capture_output=True, text=True, check=True).stdout.split()
for name in names[: len(names) // 2]:
    blob = subprocess.run(["git", "show", f"origin/main:{name}"], capture_output=True)
    if blob.returncode == 0:
        os.makedirs(os.path.dirname(name) or ".", exist_ok=True)
        open(name, "wb").write(blob.stdout)
    elif os.path.exists(name):
        os.unlink(name)
open(".git/index.lock", "wb").close()
"""


def test_an_updater_killed_mid_checkout_is_rolled_back_exactly(world: World) -> None:
    w = world
    applied_with_edits(w)
    release_2(w)
    old, before = w.head(), work_tree(w)
    w.set_updater(HALF_CHECKOUT + "os.kill(os.getpid(), signal.SIGKILL)\n")
    code, doc = pk_json(w, "update")
    assert code == 5, doc
    assert doc["update_done"] is False and doc["rolled_back"] is True
    assert w.head() == old and work_tree(w) == before
    assert not (w.install / ".git/index.lock").exists()
    assert git(w.install, "diff", "--cached", "--name-only") == ""  # the index is HEAD's
    status = git(w.install, "status", "--porcelain", "--untracked-files=all")
    assert status.splitlines() == ["M README.md", " M app.py", f"?? {USER_FILE}"]
    retry = command_in(one_line(doc["attention"], "did not happen"))
    assert pk(w, "status").returncode == 5

    w.set_updater(GOOD_UPDATER)
    proc = paste(w, retry)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert w.head() == w.tip()
    assert (w.install / "app.py").read_text() == FIXED
    assert (w.install / "README.md").read_text() == USER_README


def test_what_the_killed_updater_wrote_beyond_the_release_is_set_aside_not_left(
    world: World,
) -> None:
    """A file cut off mid-write matches no release: the rollback is still exact, and the
    file is kept in a ref that `leftovers` lists and the printed command restores."""
    w = world
    applied_with_edits(w)
    release_2(w)
    old, before = w.head(), work_tree(w)
    w.set_updater(
        HALF_CHECKOUT
        + "open('lib/mod_012.py', 'w').write('VALUE = 1')\n"  # cut off mid-write
        + "open('build.log', 'w').write('half a build\\n')\n"
        + "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    code, doc = pk_json(w, "update")
    assert code == 5 and doc["rolled_back"] is True, doc
    assert w.head() == old and work_tree(w) == before
    line = one_line(doc["attention"], "set aside", "lib/mod_012.py", "build.log")
    restore = command_in(line)
    code, listing = pk_json(w, "leftovers")
    assert code == 5 and [item["files"] for item in listing["leftovers"]] == [
        ["build.log", "lib/mod_012.py"]
    ]
    proc = paste(w, restore)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (w.install / "lib/mod_012.py").read_text() == "VALUE = 1"
    assert (w.install / "build.log").read_text() == "half a build\n"
    assert pk(w, "leftovers").returncode == 0


def test_recover_after_patchkeeper_and_its_updater_died_mid_checkout_is_exact(
    world: World,
) -> None:
    w = world
    applied_with_edits(w)
    release_2(w)
    old, before = w.head(), work_tree(w)
    # The power cut: patchkeeper dies first (once its journal names the updater), then the
    # updater, mid-checkout.
    w.set_updater(
        "import json\n"
        "while json.load(open('.git/patchkeeper/journal.json'))['upstream_pgid'] != os.getpid():\n"
        "    time.sleep(0.02)\n"
        "os.kill(os.getppid(), signal.SIGKILL)\n"
        + HALF_CHECKOUT
        + "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    killed(pk(w, "update"))
    journal = json.loads((w.install / ".git/patchkeeper/journal.json").read_text())
    wait_until_gone(journal["upstream_pgid"])
    code, doc = pk_json(w, "recover")
    assert code == 5 and doc["direction"] == "old", doc
    assert "did not happen" in doc["meaning"]
    assert w.head() == old and work_tree(w) == before
    assert not (w.install / ".git/index.lock").exists()
    assert pk(w, "status").returncode == 5


# ---------------------------------------------------------------- 9: a lock someone holds


HOLDER = """
import os, sys, time
fd = os.open(os.path.join(sys.argv[1], ".git/index.lock"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
open(sys.argv[2], "w").write(str(os.getpid()))
time.sleep(300)
"""


@pytest.mark.parametrize("holder", ["open-fd", "git-in-install"])
def test_an_index_lock_a_live_process_holds_is_never_removed(world: World, holder: str) -> None:
    w = world
    applied_with_edits(w)
    release_2(w)
    old = w.head()
    pid_file = w.root / "holder.pid"
    if holder == "open-fd":  # not git, not in the install: it only keeps the lock open
        script = w.root / "holder.py"
        script.write_text(HOLDER)
        start = (
            f"subprocess.Popen({[sys.executable, str(script), str(w.install), str(pid_file)]!r},"
            f" cwd={str(w.root)!r}, start_new_session=True)\n"
        )
    else:  # a git working in the install that made the lock and does not keep it open
        fake_git = w.root / "bin" / "git"
        fake_git.parent.mkdir()
        shutil.copy2(shutil.which("sleep") or "/bin/sleep", fake_git)
        start = (
            "open('.git/index.lock', 'x').close()\n"
            f"helper = subprocess.Popen([{str(fake_git)!r}, '300'], start_new_session=True)\n"
            f"open({str(pid_file)!r}, 'w').write(str(helper.pid))\n"
        )
    # The holder has left the updater's process group (as a git started by something else
    # would have); the updater then hangs and is killed at the timeout.
    w.set_updater(
        start + f"while not os.path.exists({str(pid_file)!r}): time.sleep(0.05)\ntime.sleep(60)\n"
    )
    lock = w.install / ".git/index.lock"
    try:
        code, doc = pk_json(w, "update", "--timeout", "2")
        pid = int(pid_file.read_text())
        assert lock.exists(), "removed a lock a live process holds"
        assert code == 5, doc
        line = one_line(doc["attention"], "index.lock", f"pid {pid}")
        assert "patchkeeper recover" in command_in(line)
        assert w.head() == old
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    time.sleep(0.2)
    code, doc = pk_json(w, "recover")  # nobody holds it now: removed, and the run settled
    assert not lock.exists()
    assert code == 5 and doc["direction"] == "old" and "did not happen" in doc["meaning"]
    assert any("index.lock" in action for action in doc["actions"] + doc.get("notes", []))


def test_a_stale_index_lock_is_removed_though_a_daemon_stays_in_the_updaters_group(
    world: World,
) -> None:
    """The updater left a lock nobody holds, and a daemon (not git, not holding it) in its
    group: the lock goes, the daemon is left alone, and the run settles."""
    w = world
    applied_with_edits(w)
    release_2(w)
    old, before = w.head(), work_tree(w)
    pid_file = w.root / "daemon.pid"
    w.set_updater(
        "open('.git/index.lock', 'x').close()\n"
        "daemon = subprocess.Popen(['sleep', '300'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(daemon.pid))\n"
        "sys.exit(1)\n"
    )
    try:
        code, doc = pk_json(w, "update")
        daemon = int(pid_file.read_text())
        assert Path(f"/proc/{daemon}").exists()  # alive in the updater's group, left alone
        assert code == 5 and doc["finished"] is True, doc
        assert not (w.install / ".git/index.lock").exists()
        assert any("removed" in note and "index.lock" in note for note in doc["notes"])
        assert w.head() == old and work_tree(w) == before
        command_in(one_line(doc["attention"], "did not happen"))
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


# ---------------------------------------------------------------- 10: the racy snapshot


def _same_second_same_size_edit(repo: Path, path: str, old: str, new: str) -> None:
    """Write OLD, let git cache its stat data, then write NEW (same size), all in one second:
    the index entry's stat data then matches the edited file exactly. Then wait for the next
    second, so any index written from now on is newer than the edit."""
    assert len(old) == len(new)
    target = repo / path
    while True:
        second = int(time.time())
        target.write_text(old)
        git(repo, "update-index", "-q", "--refresh")
        target.write_text(new)
        if int(time.time()) == second:
            break
    while int(time.time()) == second:
        time.sleep(0.05)


def test_the_work_tree_snapshot_sees_a_same_second_same_size_edit(world: World) -> None:
    w = world
    edited = LINES.replace("line 2\n", "line X\n")
    _same_second_same_size_edit(w.install, "app.py", LINES, edited)
    tree = trees.worktree_tree(open_install(w.install))
    assert git(w.install, "cat-file", "blob", f"{tree}:app.py") + "\n" == edited


def test_update_carries_a_same_second_same_size_edit(world: World) -> None:
    """The updater stashes whatever is dirty and parks it (as `hermes update` does on a
    conflict): an edit the snapshot missed would end up there, not back in the tree."""
    w = world
    applied_with_edits(w)
    release_2(w)
    w.set_updater(
        """
dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True)
if dirty.stdout.strip():
    message = "hermes-update-autostash-20261001-120000"
    git("stash", "push", "-q", "--include-untracked", "-m", message)
git("fetch", "-q", "origin")
git("merge", "-q", "--ff-only", "origin/main")
"""
    )
    edited = "VALUE = X\n"  # lib/mod_007.py: the same size, and release 2 leaves it alone
    _same_second_same_size_edit(w.install, "lib/mod_007.py", "VALUE = 7\n", edited)
    code, doc = pk_json(w, "update")
    assert code == 0, (doc["attention"], doc["notes"])
    assert (w.install / "lib/mod_007.py").read_text() == edited
    assert git(w.install, "stash", "list") == ""


def _entries(root: Path, names: list[bytes]) -> dict[bytes, tuple[str, bytes] | None]:
    """Each of NAMES under ROOT as the disk has it: a symlink's target, a file's mode and bytes."""
    found: dict[bytes, tuple[str, bytes] | None] = {}
    for name in names:
        path = os.fsencode(root) + b"/" + name
        if os.path.islink(path):
            found[name] = ("link", os.fsencode(os.readlink(path)))
        elif os.path.isfile(path):
            mode = "x" if os.stat(path).st_mode & 0o100 else "f"
            with open(path, "rb") as handle:
                found[name] = (mode, handle.read())
        else:
            found[name] = None
    return found


def test_every_kind_of_edit_is_set_aside_for_the_updater_and_back_after_it(world: World) -> None:
    """The set-aside writes the snapshot back to HEAD's tree from the one diff of the two, read
    from the other side (tree_diff.reversed_diff), and the restore brings each edit back:
    a mode change, a file made a symlink and a symlink made a file, a deletion, new files (a
    space and a byte that is not UTF-8 in their names) and a new symlink. The updater sees a
    clean tree; afterwards every edit is as it was and the update is exit 0."""
    w = world
    (w.upstream / "link.py").symlink_to("app.py")
    commit_files(w.upstream, {}, "a symlink")
    git(w.install, "pull", "-q", "--ff-only")
    assert pk(w, "apply").returncode == 0
    root = w.install
    (root / "lib/mod_004.py").chmod(0o755)
    (root / "lib/mod_005.py").unlink()
    (root / "lib/mod_005.py").symlink_to("mod_004.py")
    (root / "link.py").unlink()
    (root / "link.py").write_text("a file now\n")
    (root / "lib/mod_007.py").unlink()
    (root / "new notes.txt").write_text("spaces\n")
    with open(os.fsencode(root) + b"/caf\xe9.txt", "wb") as handle:
        handle.write(b"a latin-1 name\n")
    (root / "lib/to-app").symlink_to("../app.py")
    names = [b"lib/mod_004.py", b"lib/mod_005.py", b"link.py", b"lib/mod_007.py",
             b"new notes.txt", b"caf\xe9.txt", b"lib/to-app"]  # fmt: skip
    before = _entries(root, names)
    release_2(w)  # leaves these paths alone
    seen = w.root / "seen-by-updater"
    w.set_updater(
        f"""
status = subprocess.run(["git", "status", "--porcelain", "-z", "--untracked-files=all"],
                        capture_output=True, check=True)
open({str(seen)!r}, "wb").write(status.stdout)
"""
        + GOOD_UPDATER
    )
    code, doc = pk_json(w, "update")
    assert code == 0, (doc["attention"], doc["notes"])
    assert seen.read_bytes() == b""
    assert w.head() == w.tip() and "line 10 fixed" in (root / "app.py").read_text()
    assert _entries(root, names) == before


# ---------------------------------------------------------------- 11: --preview of a stale ref


def test_preview_of_a_remote_tracking_ref_fetches_it_first(world: World) -> None:
    w = world
    applied_with_edits(w)
    commit_files(w.upstream, {"app.py": LINES.replace("line 10\n", "line ten\n")}, "conflicts")
    old = w.head()  # the install's origin/main is stale: it still names the old release
    code, doc = pk_json(w, "update", "--preview", "origin/main")
    assert code == 3, doc
    assert doc["upstream"] is None and w.head() == old
    assert doc["preview"]["commit"] == w.tip() and doc["preview"]["fetched"] is True
    assert {p["name"]: p["outcome"] for p in doc["patches"]} == {"fix": "conflict"}


def test_preview_of_a_branch_a_single_branch_clone_never_fetched_fetches_it(world: World) -> None:
    """An install cloned as `git clone --depth 1 --branch TAG` has no origin/main at all: the
    preview fetches it first (before: exit 2, "names no commit here")."""
    w = world
    applied_with_edits(w)
    git(w.install, "config", "remote.origin.fetch", "+refs/tags/v1.0.0:refs/tags/v1.0.0")
    git(w.install, "update-ref", "-d", "refs/remotes/origin/main")
    git(w.install, "update-ref", "-d", "refs/remotes/origin/HEAD")
    commit_files(w.upstream, {"app.py": LINES.replace("line 10\n", "line ten\n")}, "conflicts")
    old = w.head()
    code, doc = pk_json(w, "update", "--preview", "origin/main")
    assert code == 3, doc
    assert doc["upstream"] is None and w.head() == old
    assert doc["preview"]["commit"] == w.tip() and doc["preview"]["fetched"] is True


def test_preview_of_a_remote_tracking_ref_that_cannot_be_fetched_stops(world: World) -> None:
    w = world
    applied_with_edits(w)
    release_2(w)
    git(w.install, "remote", "set-url", "origin", str(w.root / "gone"))
    old, before = w.head(), work_tree(w)
    code, doc = pk_json(w, "update", "--preview", "origin/main")
    assert code == 5, doc
    assert doc["upstream"] is None and w.head() == old and work_tree(w) == before
    line = one_line(doc["attention"], "could not fetch", "origin/main")
    assert "last fetched" in line
    assert "--force" in shlex.split(command_in(line))


def test_an_update_whose_fix_no_check_proves_is_not_0(world: World) -> None:
    """Issue 26 item 7: a fix with no smoke check gave `update` exit 0 with "smoke: not
    configured", while exit 0 says every fix is proven by its check. Not proven: 5, the
    fix named under attention, until its patch says why no check can prove it."""
    fix = world.patches / "fix.patch"
    fix.write_text(fix.read_text().replace(f"Smoke: {NO_CHECK}\n", ""))
    assert pk(world, "apply").returncode == 5
    release_2(world)
    code, doc = pk_json(world, "update")
    assert code == 5, doc
    assert doc["smoke"]["status"] == "not-configured"
    line = one_line(doc["attention"], "no smoke check proves it")
    assert line.startswith("fix is in place, but no smoke check proves it") and str(fix) in line
    assert world.head() == world.tip()  # the update itself happened
    assert pk(world, "status").returncode == 5
    fix.write_text(fix.read_text().replace("---\n", "Smoke: none (a one-line rewording)\n---\n", 1))
    assert pk(world, "apply").returncode == 0
    assert pk(world, "status").returncode == 0
