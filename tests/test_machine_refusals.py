"""The machine's refusals (issue 26, items 3, 4 and 5): a full disk under stderr never ends a
run; a refused rename leaves no temporary file; a refused write, in patchkeeper or in a git it
started, is exit 7 with one line naming the path, never 1 nor a wrong diagnosis.

Refusals are injected with strace (`-e inject=CALLS:error=ERRNO:when=N`) into the real
command and the gits it starts; the fixture is kill_sweep's. The sweep over every errno and
kind of call is tests/test_error_injection.py.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.benchmarks.kill_sweep import GIT_ID, Fixture, build, check, copy, git

needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
RENAMES = "rename,renameat,renameat2"


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Fixture]:
    root = tmp_path_factory.mktemp("refusals")
    return {command: build(root / command, command) for command in ("apply", "update")}


def run(
    fixture: Fixture, *args: str, prefix: tuple[str, ...] = (), **streams: object
) -> subprocess.CompletedProcess:
    command = [*prefix, sys.executable, "-m", "patchkeeper", *args]
    command += ["--install", str(fixture.install), "--patches", str(fixture.patches)]
    env = {**os.environ, **GIT_ID, "NO_COLOR": "1"}
    options = streams or {"capture_output": True}
    return subprocess.run(command, env=env, text=True, check=False, **options)  # type: ignore[call-overload]


def injected(calls: str, errno_name: str, n: int) -> tuple[str, ...]:
    inject = f"inject={calls}:error={errno_name}:when={n}"
    return ("strace", "-f", "-o", os.devnull, "-e", f"trace={calls}", "-e", inject)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("both", [False, True], ids=["stderr", "stdout-and-stderr"])
def test_an_update_logging_to_a_full_disk_runs_to_its_end_with_its_own_exit_code(
    templates: dict[str, Fixture], tmp_path: Path, both: bool
) -> None:
    """`update >> log 2>&1` on a full /var: every write of its report fails (ENOSPC). It used to
    end in phase 1 with exit 120 and an unfinished journal."""
    fixture = copy(templates["update"], tmp_path / "box")
    upstream_head = git(fixture.root / "upstream", "rev-parse", "HEAD")
    with open("/dev/full", "w") as full:
        out = full if both else subprocess.PIPE
        proc = run(fixture, "update", stdout=out, stderr=full)
    assert proc.returncode == 0, proc.stdout
    if not both:  # stderr's loss is named once, on stdout
        assert proc.stdout.count("note: stderr: No space left on device") == 1
    assert not (fixture.install / ".git/patchkeeper/journal.json").exists()  # finished
    assert git(fixture.install, "rev-parse", "HEAD") == upstream_head
    assert check(fixture).recovered


@needs_strace
@pytest.mark.parametrize("errno_name", ["EROFS", "EPERM"])
def test_a_refused_rename_in_the_work_tree_leaves_no_temporary_file(
    templates: dict[str, Fixture], tmp_path: Path, errno_name: str
) -> None:
    """`apply`'s renames: the first two put the lock and the tree-write journal in place, the
    next ones its files, then its state. Each refused: exit 7, one line naming the path,
    nothing left half-written, and a tree write that says so left as it was."""
    for n in range(3, 9):
        fixture = copy(templates["apply"], tmp_path / f"box-{n}")
        before = git(fixture.install, "status", "--porcelain", "--untracked-files=all")
        proc = run(fixture, "apply", prefix=injected(RENAMES, errno_name, n))
        assert proc.returncode == 7, (n, proc.stdout, proc.stderr)
        (line,) = [line for line in proc.stderr.splitlines() if "error" in line]
        assert str(fixture.install) in line and os.strerror(getattr(errno, errno_name)) in line
        assert list(fixture.install.rglob(".patchkeeper-*")) == [], n
        if "left as it was" in line and "/.git/" not in line:  # a file of the tree's write
            after = git(fixture.install, "status", "--porcelain", "--untracked-files=all")
            assert after == before, n
        assert check(fixture).recovered
        shutil.rmtree(fixture.root)


@needs_strace
def test_a_git_whose_answer_never_arrives_is_exit_7_not_a_bare_repository(
    templates: dict[str, Fixture], tmp_path: Path
) -> None:
    """The first write of every process fails (ENOSPC): the first git's answer (`rev-parse`)
    is lost though it exits 0. That was "a bare repository is not an install" (exit 2)."""
    fixture = copy(templates["apply"], tmp_path / "box")
    proc = run(fixture, "status", prefix=injected("write", "ENOSPC", 1))
    assert proc.returncode == 7, proc.stdout + proc.stderr
    assert "bare" not in proc.stdout + proc.stderr


@needs_strace
@pytest.mark.parametrize(
    ("calls", "errno_name", "n", "words"),
    [
        # the first rename of git update-index: its new index (git: "Unable to write new
        # index file"), which was exit 1
        (RENAMES, "EDQUOT", 1, "Unable to write new index file"),
        # patchkeeper's record of a written diff (state): EPERM was an "internal error"
        (RENAMES, "EPERM", 6, "written/p1.diff: Operation not permitted"),
    ],
    ids=["git-index-edquot", "state-eperm"],
)
def test_refusals_in_git_and_in_the_state_are_exit_7_naming_the_path(
    templates: dict[str, Fixture],
    tmp_path: Path,
    calls: str,
    errno_name: str,
    n: int,
    words: str,
) -> None:
    fixture = copy(templates["apply"], tmp_path / "box")
    proc = run(fixture, "apply", prefix=injected(calls, errno_name, n))
    assert proc.returncode == 7, proc.stdout + proc.stderr
    (line,) = [line for line in proc.stderr.splitlines() if "error" in line]
    assert words in line and str(fixture.install) in line, line
    assert "internal error" not in proc.stderr
    assert check(fixture).recovered
