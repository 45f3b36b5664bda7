"""The command line as a whole: every command is there, documented, with an example."""

from __future__ import annotations

import pytest

from patchkeeper import __version__
from patchkeeper.cli import COMMANDS
from tests.helpers import run_cli


def test_version() -> None:
    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"patchkeeper, version {__version__}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_help_with_an_example(name: str) -> None:
    proc = run_cli(name, "--help")
    assert proc.returncode == 0, proc.stderr
    assert "Example" in proc.stdout and f"patchkeeper {name}" in proc.stdout


def test_an_unknown_command_is_a_usage_error() -> None:
    proc = run_cli("upgrade")
    assert proc.returncode == 2 and "No such command 'upgrade'" in proc.stderr
