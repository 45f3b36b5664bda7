"""What an operator reads (issue 28, item 6): `check` says why a patch is invalid and points
its annotation at the bad header line; FORCE_COLOR and CLICOLOR_FORCE colour a pipe (NO_COLOR
still wins); a dumb terminal gets no line rewritten in place; group help shows whole
summaries."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from patchkeeper.report import progress
from tests.helpers import GIT_ID, diff_of, make_repo, patch_text, write_patch_set

LINES = "".join(f"line {n}\n" for n in range(1, 11))


def cli(*args: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR",
                                                             "CLICOLOR_FORCE")}  # fmt: skip
    return subprocess.run([sys.executable, "-m", "patchkeeper", *map(str, args)],
                          env={**base, **GIT_ID, **env}, capture_output=True, text=True,
                          check=False)  # fmt: skip


@pytest.fixture
def invalid_set(tmp_path: Path) -> tuple[Path, Path]:
    repo = make_repo(tmp_path / "up", {"app.py": LINES}, tag="v1.0.0")
    diff = diff_of(repo, {"app.py": LINES.replace("line 5\n", "line 5 fixed\n")})
    text = patch_text(diff, applies_to=">=banana")  # line 2 of the patch file
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": text})
    return repo, patches


def test_check_says_why_a_patch_is_invalid(invalid_set: tuple[Path, Path]) -> None:
    repo, patches = invalid_set
    proc = cli("check", "--ref", "v1.0.0", "--install", repo, "--patches", patches)
    assert proc.returncode == 3, proc.stderr
    assert f"invalid  ({patches / 'fix.patch'}:2: invalid PEP 440 specifier" in proc.stdout


def test_the_annotation_of_an_invalid_patch_points_at_its_bad_header_line(
    invalid_set: tuple[Path, Path],
) -> None:
    repo, patches = invalid_set
    proc = cli("check", "--ref", "v1.0.0", "--install", repo, "--patches", patches,
               "--format", "github")  # fmt: skip
    error = next(line for line in proc.stdout.splitlines() if line.startswith("::error "))
    assert re.search(r"file=[^,]*fix\.patch,line=2,", error), error


@pytest.mark.parametrize("force", ["FORCE_COLOR", "CLICOLOR_FORCE"])
def test_forced_colour_reaches_a_pipe_and_no_color_wins(
    invalid_set: tuple[Path, Path], force: str
) -> None:
    repo, patches = invalid_set
    where = ("check", "--ref", "v1.0.0", "--install", repo, "--patches", patches)
    assert "\x1b[" not in cli(*where).stdout
    assert "\x1b[" in cli(*where, **{force: "1"}).stdout
    assert "\x1b[" not in cli(*where, **{force: "0"}).stdout
    assert "\x1b[" not in cli(*where, **{force: "1", "NO_COLOR": "1"}).stdout


@pytest.mark.parametrize(("term", "in_place"), [("xterm", True), ("dumb", False)])
def test_progress_rewrites_a_line_only_on_a_terminal_that_can(
    term: str, in_place: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TERM", term)
    leader, follower = os.openpty()
    with open(follower, "w", encoding="utf-8") as stream:
        shown = progress.Progress("check", 3, "refs", stream=stream)
        shown.started -= 2 * progress.DELAY  # it has taken long enough to be shown
        shown.update(3, "v3")
        shown.close()
    written = os.read(leader, 4096).decode()
    os.close(leader)
    assert "check: 3/3 refs (v3)" in written
    assert ("\x1b[K" in written) is in_place, repr(written)


@pytest.mark.parametrize("group", ["fleet", "timer"])
def test_group_help_shows_each_summary_whole(group: str) -> None:
    proc = cli(group, "--help", COLUMNS="80")
    assert proc.returncode == 0
    listed = " ".join(proc.stdout.split("Commands:", 1)[1].split())
    assert "..." not in listed
    import importlib

    module = importlib.import_module(f"patchkeeper.commands.{group}")
    for sub in module.command.commands.values():
        summary = " ".join((sub.help or "").split("\n\n", 1)[0].split())
        assert summary in listed, (summary, listed)
