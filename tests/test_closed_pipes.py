"""A reader that goes away early (`patchkeeper check | head -1`): the output it no longer reads
is dropped without a word, the command runs to its end, and the exit code is the one the
command gives with its reader in place. The pipe is closed before the first write, so every
write meets EPIPE: what `head -1` does to any output longer than its pipe's buffer."""

from __future__ import annotations

import subprocess
import sys

import pytest

from patchkeeper.demo.sandbox import Sandbox
from tests.helpers import GIT_ID, git
from tests.test_update import pk, quiet


@pytest.fixture
def box(sandbox: Sandbox) -> Sandbox:
    return quiet(sandbox)


def closed_early(box: Sandbox, *args: str, stderr_too: bool = False) -> tuple[int, bytes]:
    """Run patchkeeper ARGS with its stdout (and stderr) read by nobody: (exit code, stderr)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "patchkeeper", *args, "--patches", str(box.patches)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**box.hermes_env(), **GIT_ID, "NO_COLOR": "1"},
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    if stderr_too:
        proc.stderr.close()
        return proc.wait(timeout=120), b""
    error = proc.stderr.read()
    return proc.wait(timeout=120), error


@pytest.mark.parametrize("args", [("check", "--ref", "HEAD"), ("check", "--ref", "HEAD", "--json"),
                                  ("status",), ("lint",)])  # fmt: skip
def test_a_closed_stdout_is_the_same_exit_code_and_no_message(
    box: Sandbox, args: tuple[str, ...]
) -> None:
    expected = pk(box, *args).returncode
    assert expected in (0, 5)  # status: the patches are not applied yet (5)
    assert closed_early(box, *args) == (expected, b"")


def test_an_update_whose_reader_left_runs_to_its_end(box: Sandbox) -> None:
    """Progress and the updater's output go to stderr from the first phase on: a closed stderr
    and stdout stop nothing, and the update's exit code is its own."""
    assert pk(box, "apply").returncode == 0
    box.publish("v2026.9.24")
    code, _ = closed_early(box, "update", stderr_too=True)
    assert code == 0
    assert git(box.install, "rev-parse", "HEAD") == git(box.origin, "rev-parse", "main")
    proc = pk(box, "status")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def closed_from_the_start(box: Sandbox, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`patchkeeper ARGS >&-`: no stdout at all (Python's sys.stdout is None)."""
    command = [sys.executable, "-m", "patchkeeper", *args, "--patches", str(box.patches)]
    return subprocess.run(
        ["sh", "-c", '"$@" >&-', "sh", *command],
        stderr=subprocess.PIPE,
        env={**box.hermes_env(), **GIT_ID, "NO_COLOR": "1"},
        timeout=120,
    )


def test_a_stdout_closed_from_the_start_keeps_the_commands_exit_code(box: Sandbox) -> None:
    status = closed_from_the_start(box, "status")
    assert (status.returncode, status.stderr) == (5, b"")  # not applied yet, not exit 1
    applied = closed_from_the_start(box, "apply")
    assert applied.returncode == 0, applied.stderr
    assert b"internal error" not in applied.stderr
    assert pk(box, "status").returncode == 0  # it ran to its end
