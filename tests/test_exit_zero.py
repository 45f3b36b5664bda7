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
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from patchkeeper import leftovers as lo
from patchkeeper.install import open_install
from tests.helpers import GIT_ID, commit_files, diff_of, git, make_repo, patch_text, write_patch_set

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


# ---------------------------------------------------------------- 4: the interpreter


def with_smoke_check(w: World, python: str | None) -> None:
    check = w.patches / "smoke" / "ok.py"
    check.parent.mkdir()
    check.write_text('import json\nprint(json.dumps({"check": "ok", "verdict": "pass"}))\n')
    patch = w.patches / "fix.patch"
    patch.write_text(patch.read_text().replace("Description:", "Smoke: ok\nDescription:", 1))
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
    tree = lo.worktree_tree(open_install(w.install))
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
