"""A plain `check` is read without click (commands/check_args.py): it must read every command
line it takes exactly as click reads it, leave every other one to click, and the run it starts
must print what click's would; `--version` loads no module but the CLI's own."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from patchkeeper.commands import check_run
from patchkeeper.commands.check import command
from patchkeeper.commands.check_args import plain_check
from patchkeeper.demo.sandbox import TAGS, Sandbox
from tests.helpers import GIT_ID, modules_loaded

OPTIONS = ["--ref", "--tags", "--install", "--patches", "--format", "--json", "--progress",
           "--no-progress", "--since", "--fetch", "--junit", "--metrics", "-h", "--help", "--",
           "--refs", "-r", "--json=1"]  # fmt: skip
FLAGS = ("--json", "--progress", "--no-progress")
VALUES = ["v1.0", "v*", "main", "json", "text", "junit", "github", "JSON", "", "-", "-x",
          "--json", "a=b", "=", "0.2", "missing/folder", "x\tb"]  # fmt: skip


def through_click(args: list[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any] | None:
    """What check.py passes to check_run.run when click reads ARGS, or None when click or
    check.py refuses them (a usage error, help, a bad value)."""
    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(check_run, "run", lambda **kw: seen.append(kw) or 0)
    try:
        with (
            click.Context(click.Group("patchkeeper")) as parent,
            command.make_context("check", list(args), parent=parent) as ctx,
        ):
            command.invoke(ctx)
    except (click.ClickException, click.exceptions.Exit):
        return None
    return seen[0]


def command_lines(folder: Path, file: Path) -> list[list[str]]:
    """Hand-picked lines, then many random ones from options and values that include every
    way click refuses or reads a line differently."""
    values = [*VALUES, str(folder), str(file), str(folder / "new")]
    lines = [
        ["--ref", "v1.0"], ["--ref=v1.0"], ["--ref", "a", "--ref", "b", "--ref", "a"],
        ["--tags", "v*", "--ref", "main", "--json"], ["--ref", "x", "--format", "json", "--json"],
        ["--ref", "x", "--format", "text", "--json"], ["--ref", "x", "--json=yes"],
        ["--ref", "x", "--install", str(folder), "--install", str(folder / "new")],
        ["--ref", "x", "--patches", str(file)], ["--ref", "x", "--patches", str(folder)],
        ["--ref", "x", "--format", "JSON"], ["--ref"], ["--ref", "--json"], ["--ref="],
        ["--json"], [], ["--ref", "x", "extra"], ["--ref", "x", "--"], ["--ref", "x", "-h"],
        ["--ref", "x", "--progress", "--no-progress"], ["--ref", "x", "--no-progress=1"],
        ["--ref", "a=b=c"], ["--tags=v=1"], ["--ref", "x", "--format=github"],
    ]  # fmt: skip
    plain_values = ["v1.0", "v*", "main", "json", "text", "github", "a=b", str(folder), str(file)]
    plain_values += ["json", "text"]  # --format's, more often
    chance = random.Random(30)
    for number in range(4000):
        noisy = number % 2 == 0  # half of them mostly plain, so that many are taken
        line: list[str] = []
        for _ in range(chance.randrange(0, 8)):
            option = chance.choice(OPTIONS if noisy else OPTIONS[:8])
            value = chance.choice(values if noisy else plain_values)
            # 0: --option=value, 1-2: --option value, 3: --option alone (a flag's plain form)
            form = chance.randrange(4) if noisy else 3 if option in FLAGS else chance.randrange(3)
            line += (
                [f"{option}={value}"] if form == 0 else [option, value] if form < 3 else [option]
            )
        lines.append(line)
    return lines


def test_the_fast_path_reads_every_line_it_takes_as_click_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "set"
    folder.mkdir()
    file = tmp_path / "a-file"
    file.write_text("x\n")
    taken = 0
    for args in command_lines(folder, file):
        fast = plain_check(args, {})
        if fast is None:
            continue
        taken += 1
        assert through_click(args, monkeypatch) == fast, args
    assert taken >= 500  # the comparison covered many lines the fast path takes


def test_completion_and_anything_unknown_go_to_click() -> None:
    assert plain_check(["--ref", "x"], {"_PATCHKEEPER_COMPLETE": "bash_complete"}) is None
    assert plain_check(["--ref", "x", "--since", "1.0"], {}) is None
    assert plain_check(["--ref", "x", "--help"], {}) is None
    assert plain_check(["--ref", "x"], {}) is not None


def pk(sandbox: Sandbox, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "patchkeeper", "check", *args, "--install", str(sandbox.install),
         "--patches", str(sandbox.patches)],
        capture_output=True, text=True, check=False,
        env={**os.environ, **GIT_ID, "NO_COLOR": "1"},
    )  # fmt: skip




def test_a_plain_check_prints_what_click_would_without_loading_click(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    sandbox.fetch_tags()
    for extra in ([], ["--json"], ["--format", "github"]):
        args = ["--ref", TAGS[0], "--ref", TAGS[-1], *extra]
        assert plain_check(args, {}) is not None
        fast = pk(sandbox, *args)
        # --metrics is no plain option: click reads this line; stdout is the same document
        slow = pk(sandbox, *args, "--metrics", str(tmp_path / "check.prom"))
        assert fast.returncode == slow.returncode == 3, fast.stderr
        assert fast.stdout == slow.stdout and fast.stderr == slow.stderr == ""
    modules = modules_loaded("check", "--ref", TAGS[-1], "--install", str(sandbox.install),
                             "--patches", str(sandbox.patches))  # fmt: skip
    assert "patchkeeper.engine.checking" in modules  # it did check
    assert not {m for m in modules if m.split(".")[0] == "click"}


def test_a_plain_check_fails_as_click_did(sandbox: Sandbox, tmp_path: Path) -> None:
    missing = pk(sandbox, "--ref", "no-such-ref")
    assert plain_check(["--ref", "no-such-ref"], {}) is not None
    slow = pk(sandbox, "--ref", "no-such-ref", "--metrics", str(tmp_path / "check.prom"))
    assert (missing.returncode, missing.stdout, missing.stderr) == (
        slow.returncode, slow.stdout, slow.stderr)  # fmt: skip
    assert missing.stderr.startswith("patchkeeper: ") and missing.stderr.count("\n") == 1


def test_version_loads_nothing_but_the_cli() -> None:
    assert modules_loaded("--version") - {"patchkeeper._version"} == {
        "patchkeeper", "patchkeeper.cli"}  # fmt: skip


def test_the_version_line_is_clicks(capsys: pytest.CaptureFixture[str]) -> None:
    from patchkeeper.cli import cli

    with pytest.raises(SystemExit):
        cli.main(["--version"], prog_name="patchkeeper")
    proc = subprocess.run([sys.executable, "-m", "patchkeeper", "--version"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert proc.stdout == capsys.readouterr().out
