"""Hostile and odd input (issue 9): exit 2, one line (control characters escaped), nothing
written, never a hang, a traceback or exit 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import (
    GIT_ID,
    diff_of,
    make_repo,
    patch_text,
    tree_snapshot,
    write_patch_set,
)

LINES = "".join(f"line {n}\n" for n in range(1, 21))
FIXED = LINES.replace("line 5\n", "line 5 fixed\n")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "up", {"app.py": LINES}, tag="v1.0.0")


def good_diff(repo: Path) -> str:
    return diff_of(repo, {"app.py": FIXED})


def cli(*args: str | Path, timeout: float = 60, env: dict[str, str] | None = None):
    """The CLI as a subprocess that may not hang: a run past TIMEOUT fails the test."""
    return subprocess.run(
        [sys.executable, "-m", "patchkeeper", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **GIT_ID, "NO_COLOR": "1", **(env or {})},
        check=False,
    )


def assert_refused(proc: subprocess.CompletedProcess[str], *words: str) -> str:
    """Exit 2 with one line on stderr that says WORDS; no traceback. Returns the line."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def every_command(repo: Path, patches: Path) -> dict[str, list[str | Path]]:
    where: list[str | Path] = ["--install", repo, "--patches", patches]
    return {
        "status": ["status", *where],
        "check": ["check", "--ref", "HEAD", *where],
        "apply": ["apply", *where],
    }


def assert_every_command_refuses(repo: Path, patches: Path, *words: str) -> None:
    before = tree_snapshot(repo)
    for args in every_command(repo, patches).values():
        assert_refused(cli(*args, timeout=30), *words)
        assert tree_snapshot(repo) == before
    lint = cli("lint", "--patches", patches, timeout=30)
    assert lint.returncode == 2 and "Traceback" not in lint.stderr, lint
    assert any(all(w in line for w in words) for line in lint.stdout.splitlines()), lint.stdout


# ---------------------------------------------------------------- 4. control characters


def test_control_characters_from_a_patch_are_escaped_in_errors(repo: Path, tmp_path: Path) -> None:
    diff = good_diff(repo).replace(" line 4\n", "\x0bline 4\n")
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(diff)})
    line = assert_refused(cli("apply", "--install", repo, "--patches", patches), "fix.patch")
    assert "\\x0b" in line and "\x0b" not in line
    lint = cli("lint", "--patches", patches)
    problems = [line for line in lint.stdout.splitlines() if "fix.patch" in line]
    assert lint.returncode == 2 and len(problems) == 1 and "\\x0b" in problems[0], lint.stdout


def test_a_file_name_with_a_newline_is_escaped(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix/a.patch": patch_text(good_diff(repo))})
    (patches / "fix" / "evil\nname\x1b[31m.patch").write_text("Description: x\n---\n")
    proc = cli("apply", "--install", repo, "--patches", patches)
    line = assert_refused(proc, "evil\\nname\\x1b[31m.patch")
    assert "\x1b" not in line
