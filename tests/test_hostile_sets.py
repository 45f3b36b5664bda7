"""Patch sets and upstreams built to break the loader: a version number past Python's
int-conversion limit, a config nested thousands deep, a series entry that is the set itself.
Each is one line naming the file (and line), exit 2, nothing written (a patch file's own
problem: that patch `invalid`, exit 3); or, for what upstream states after HEAD moved, no
command that dies on it."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from patchkeeper.demo.sandbox import Sandbox
from tests.helpers import diff_of, git, make_repo, patch_text, run_cli, tree_snapshot
from tests.test_update import pk, quiet

LINES = "".join(f"line {n}\n" for n in range(1, 21))
HUGE = "9" * 5000  # past the 4300 digits int() converts


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "up", {"app.py": LINES}, tag="v1.0.0")


@pytest.fixture
def box(sandbox: Sandbox) -> Sandbox:
    return quiet(sandbox)


def fix_set(root: Path, repo: Path, series: str = "fix.patch\n", **fields: str) -> Path:
    root.mkdir()
    diff = diff_of(repo, {"app.py": LINES.replace("line 5\n", "line 5 fixed\n")})
    (root / "fix.patch").write_text(patch_text(diff, **fields))
    (root / "series").write_text(series)
    return root


def refused(repo: Path, patches: Path, *names: str) -> list[str]:
    """lint, status and apply each refuse PATCHES with exit 2 and one line naming NAMES and
    touch nothing; returns the lines."""
    before = tree_snapshot(repo)
    lines = []
    for command in ("lint", "status", "apply"):
        args = ["--patches", patches]
        if command != "lint":
            args += ["--install", repo]
        proc = run_cli(command, *args)
        assert proc.returncode == 2, (command, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
        first = (proc.stdout if command == "lint" else proc.stderr).splitlines()[0]
        assert all(name in first for name in names), (command, first)
        if command != "lint":
            assert len(proc.stderr.splitlines()) == 1, proc.stderr
        lines.append(first)
    assert tree_snapshot(repo) == before
    return lines


@pytest.mark.parametrize("field", ["applies_to", "upstream_fixed_in"])
@pytest.mark.parametrize("spec", [f">={HUGE}", f"=={HUGE}.*", f">=1.0,<1.{HUGE}"])
def test_a_version_too_long_to_compare_is_refused_with_file_and_line(
    field: str, spec: str, repo: Path, tmp_path: Path
) -> None:
    patches = fix_set(tmp_path / "ps", repo, **{field: spec})
    header = field.replace("_", "-").title()
    line = next(n for n, text in enumerate((patches / "fix.patch").read_text().splitlines(), 1)
                if text.startswith(f"{header}:"))  # fmt: skip
    for said in invalid_alone(repo, patches, f"fix.patch:{line}:", "too long to compare"):
        assert len(said) < 300  # the 5,000 digits are not repeated back


def invalid_alone(repo: Path, patches: Path, *names: str) -> list[str]:
    """One patch file's problem (issue 17): lint lists it (exit 2, a line naming NAMES);
    status and apply judge that patch `invalid`, saying NAMES, exit 3, and write nothing.
    Returns what each said."""
    before = tree_snapshot(repo)
    lint = run_cli("lint", "--patches", patches)
    assert lint.returncode == 2, (lint.stdout, lint.stderr)
    said = [lint.stdout.splitlines()[0]]
    for command in ("status", "apply"):
        proc = run_cli(command, "--patches", patches, "--install", repo, "--json")
        assert proc.returncode == 3, (command, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
        (result,) = json.loads(proc.stdout)["patches"]
        assert result["outcome"] == "invalid", result
        said.append(result["detail"])
    for text in said:
        assert all(name in text for name in names), said
    assert tree_snapshot(repo) == before
    return said


def test_a_version_at_the_edge_of_the_limit_still_loads(repo: Path, tmp_path: Path) -> None:
    patches = fix_set(tmp_path / "ps", repo, applies_to=f"<{'9' * 4300}")
    proc = run_cli("apply", "--install", repo, "--patches", patches)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_an_upstream_stating_a_huge_version_after_head_moved_stops_nothing(
    box: Sandbox, tmp_path: Path
) -> None:
    """The version file of the release an update brings says 5,000 nines: not a version, so
    the version comes from git describe; update, status and recover never die on it."""
    clone = tmp_path / "release"
    subprocess.run(["git", "clone", "-q", str(box.origin), str(clone)], check=True)
    init = clone / "hermes_cli/__init__.py"
    init.write_text(re.sub(r'__version__ = "[^"]*"', f'__version__ = "{HUGE}"', init.read_text()))
    git(clone, "commit", "-qam", "a release whose version no int() takes")
    git(clone, "push", "-q", "origin", "HEAD:main")
    proc = pk(box, "update")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert git(box.install, "rev-parse", "HEAD") == git(clone, "rev-parse", "HEAD")
    for command in ("status", "recover"):
        proc = pk(box, command)
        assert proc.returncode == 0, (command, proc.stdout + proc.stderr)
        assert "internal error" not in proc.stderr


@pytest.mark.parametrize("opening", ["[", "{a="])
def test_a_config_nested_thousands_deep_is_one_line_exit_2(
    opening: str, repo: Path, tmp_path: Path
) -> None:
    patches = fix_set(tmp_path / "ps", repo)
    closing = "]" if opening == "[" else "}"
    nested = "x = " + opening * 5000 + ("1" if opening == "{a=" else "") + closing * 5000
    (patches / "patchkeeper.toml").write_text(f"[install]\n{nested}\n")
    before = tree_snapshot(repo)
    for command in ("status", "apply", "update"):
        proc = run_cli(command, "--install", repo, "--patches", patches)
        assert proc.returncode == 2, (command, proc.stderr)
        assert proc.stderr.splitlines() == [
            f"patchkeeper: error: {patches / 'patchkeeper.toml'}: not valid TOML here: arrays "
            "or tables nested too deeply"
        ]
    proc = run_cli("lint", "--patches", patches)
    assert proc.returncode == 2 and "patchkeeper.toml:1: not valid TOML here" in proc.stdout
    assert tree_snapshot(repo) == before


@pytest.mark.parametrize("entry", ["again", "./", "up"])
def test_a_series_entry_that_is_the_set_itself_is_refused(
    entry: str, repo: Path, tmp_path: Path
) -> None:
    patches = fix_set(tmp_path / "ps", repo, series=f"fix.patch\n{entry}\n")
    if entry != "./":
        os.symlink("." if entry == "again" else "..", patches / entry)
    what = "a folder above the patch set" if entry == "up" else "the patch set's own folder"
    lines = refused(repo, patches, "series:2:", what)
    assert lines[0] == (
        f"{patches / 'series'}:2: {entry.rstrip('/')!r} is {what}; a series entry names a "
        "patch file or a folder of variants"
    )  # and the one problem: the set's own files seen again through the link are no strays


@pytest.mark.parametrize("how", ["file", "variant", "folder"])
def test_a_series_entry_that_reaches_a_listed_patch_through_a_symlink_is_refused(
    how: str, repo: Path, tmp_path: Path
) -> None:
    patches = fix_set(tmp_path / "ps", repo, series="fix.patch\nalias\n")
    if how == "file":
        (patches / "series").write_text("fix.patch\nalias.patch\n")
        os.symlink("fix.patch", patches / "alias.patch")
    elif how == "variant":
        (patches / "alias").mkdir()
        os.symlink("../fix.patch", patches / "alias/a.patch")
    else:
        (patches / "series").write_text("fix\nalias\n")
        (patches / "fix").mkdir()
        (patches / "fix.patch").rename(patches / "fix/a.patch")
        os.symlink("fix", patches / "alias")
    first = "fix" if how == "folder" else "fix.patch"
    refused(repo, patches, "series:2:", f"is the same patch file as {first!r}")


def test_a_patch_outside_the_set_through_a_symlink_still_loads(repo: Path, tmp_path: Path) -> None:
    """Symlinks are fine where they lead to a patch of its own (one kept elsewhere)."""
    patches = fix_set(tmp_path / "ps", repo)
    (tmp_path / "kept").mkdir()
    (patches / "fix.patch").rename(tmp_path / "kept/fix.patch")
    os.symlink(tmp_path / "kept/fix.patch", patches / "fix.patch")
    proc = run_cli("lint", "--patches", patches)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_check_since_a_version_too_long_to_compare_is_a_usage_error(
    repo: Path, tmp_path: Path
) -> None:
    patches = fix_set(tmp_path / "ps", repo)
    proc = run_cli("check", "--install", repo, "--patches", patches, "--since", HUGE)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "is not a PEP 440 version" in proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr) < 1000  # the 5,000 digits are not repeated back
