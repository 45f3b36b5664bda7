"""A newcomer's first hour (issue 9, items 12, 13, 16): the README's set-up commands work on a
stock system Python, the tests need no git identity of the machine's, shell completion is
documented and works, and the licence the package declares is there."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


# ---------------------------------------------------------------- 12. a venv first


def set_up_commands() -> list[str]:
    """The two commands under `## Set up`, in order: the demo's, then the tests'."""
    section = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", section, re.S)][:2]


def test_the_set_up_commands_make_a_venv_first() -> None:
    """A PEP 668 system Python refuses `pip install` outside a venv."""
    demo, tests = set_up_commands()
    venv = "python3 -m venv .venv && . .venv/bin/activate && "
    assert demo == f"{venv}python3 -m pip install -e . && patchkeeper demo"
    assert tests == f"{venv}python3 -m pip install -e '.[test]' && python3 -m pytest -n 2"


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    _, tests = set_up_commands()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert any(line.strip() == tests for line in ci.splitlines()), ci


# ---------------------------------------------------------------- 13. no git identity needed


def test_the_suite_needs_no_git_identity_of_the_machine(tmp_path: Path) -> None:
    """No global or system git config, no identity in the environment: the tests set their
    own (conftest.py), so the README's test command works on any machine."""
    home = tmp_path / "home"
    home.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GIT_", "PYTEST_", "EMAIL")) and key != "PYTEST_XDIST_WORKER"
    }
    env |= {"HOME": str(home), "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    probe = subprocess.run(["git", "var", "GIT_COMMITTER_IDENT"], env=env, cwd=tmp_path,
                           capture_output=True, check=False)  # fmt: skip
    if probe.returncode == 0:
        pytest.skip("git guesses an identity from the system here (hostname, passwd)")
    test = "tests/test_leftovers.py::test_unmerged_paths_are_listed_and_left_to_git"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", test],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


# ---------------------------------------------------------------- 16. licence, completion


def test_the_licence_the_package_declares_is_shipped() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    assert "MIT" in str(declared)
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "Permission is hereby granted" in text


def test_shell_completion_is_documented_and_works() -> None:
    for shell in ("bash", "zsh", "fish"):
        assert f"_PATCHKEEPER_COMPLETE={shell}_source patchkeeper" in README, shell
    script = Path(sys.executable).parent / "patchkeeper"
    if not script.exists():
        pytest.skip("the patchkeeper script is not installed beside this interpreter")
    env = {**os.environ, "_PATCHKEEPER_COMPLETE": "bash_source"}
    source = subprocess.run([script], env=env, capture_output=True, text=True, check=False)
    assert "_patchkeeper_completion" in source.stdout
    env = {**os.environ, "_PATCHKEEPER_COMPLETE": "bash_complete",
           "COMP_WORDS": "patchkeeper lef", "COMP_CWORD": "1"}  # fmt: skip
    words = subprocess.run([script], env=env, capture_output=True, text=True, check=False)
    assert words.stdout.split() == ["plain,leftovers"], words
