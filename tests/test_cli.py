"""The command line as a whole: every command is there, documented, with an example."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from patchkeeper import __version__
from patchkeeper.cli import COMMANDS
from tests.helpers import run_cli


def test_version() -> None:
    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"patchkeeper, version {__version__}"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [("--version",), ("--help",), ("lint",), ("lint", "--json")])
def test_stdout_on_a_full_disk_is_noted_once_and_the_exit_code_is_the_commands(
    args: tuple[str, ...],
) -> None:
    """A stdout that cannot be written (a full disk) is dropped, named in one note on stderr,
    and the exit code is the command's own: never a traceback from the interpreter's last
    flush (exit 120), never a run cut short. --version answers without click, and takes the
    same way out."""
    command = [sys.executable, "-m", "patchkeeper", *args]
    own = subprocess.run(command, capture_output=True, text=True, check=False)
    with open("/dev/full", "w") as full:
        proc = subprocess.run(command, stdout=full, stderr=subprocess.PIPE, text=True,
                              check=False)  # fmt: skip
    note = "patchkeeper: note: stdout: No space left on device; what was left to write there "
    assert proc.stderr == own.stderr + note + "was dropped\n"
    assert proc.returncode == own.returncode


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_help_with_an_example(name: str) -> None:
    proc = run_cli(name, "--help")
    assert proc.returncode == 0, proc.stderr
    assert "Example" in proc.stdout and f"patchkeeper {name}" in proc.stdout


def test_an_unknown_command_is_a_usage_error() -> None:
    proc = run_cli("upgrade")
    assert proc.returncode == 2 and "No such command 'upgrade'" in proc.stderr


@pytest.mark.parametrize(
    "args", [["--help"], [], ["upgrade"], ["--bogus"], ["status", "--bogus"], ["status", "--help"]]
)
def test_collection_is_back_on_after_main_whichever_way_it_ends(args: list[str]) -> None:
    """The start-up's pause of garbage collection (click and the command loading) ends
    however `main` ends, also where no command module is imported (`--help`, a usage error):
    an in-process caller's first `main` must not leave its process without collection."""
    code = (
        "import contextlib, gc, io, sys\n"
        f"sys.argv = ['patchkeeper', *{args!r}]\n"
        "from patchkeeper.cli import main\n"
        "try:\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        with contextlib.redirect_stderr(io.StringIO()):\n"
        "            main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(gc.isenabled())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.split() == ["True"], proc.stderr
