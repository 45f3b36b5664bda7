"""File names that are not UTF-8 (git keeps bytes; patchkeeper reads them with
surrogateescape): a patch that fails forward on such a file is judged like any other, by the
3-way step and the conflict report, never an internal error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import GIT_ID

BASE = b"".join(b"line %d\n" % n for n in range(12))


def _git(repo: Path, *args: str) -> bytes:
    env = {**os.environ, **GIT_ID}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True).stdout


def _edit(text: bytes, number: int, line: bytes) -> bytes:
    lines = text.splitlines(keepends=True)
    lines[number] = line
    return b"".join(lines)


def world(
    tmp_path: Path, names: list[bytes], upstream_line: int, one_patch: bool = False
) -> tuple[Path, Path]:
    """REPO with NAMES at v1 and v2 (line UPSTREAM_LINE changed upstream), and a patch set of
    one patch per name (ONE_PATCH: one for them all) changing line 6 of each file."""
    repo, patches = tmp_path / "repo", tmp_path / "ps"
    repo.mkdir()
    patches.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    files = [os.path.join(os.fsencode(repo), name) for name in names]
    for file in files:
        Path(os.fsdecode(file)).write_bytes(BASE)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "v1")
    series = []
    for number, group in enumerate([files] if one_patch else [[f] for f in files]):
        for file in group:
            Path(os.fsdecode(file)).write_bytes(_edit(BASE, 6, b"line 6 local\n"))
        diff = _git(repo, "diff")
        _git(repo, "checkout", "-q", "--", ".")
        (patches / f"p{number}.patch").write_bytes(
            b"Description: a fix\nSmoke: none (a test fixture)\n---\n" + diff
        )
        series.append(f"p{number}.patch")
    (patches / "series").write_text("\n".join(series) + "\n")
    for file in files:
        Path(os.fsdecode(file)).write_bytes(_edit(BASE, upstream_line, b"upstream\n"))
    _git(repo, "commit", "-qam", "v2")
    return repo, patches


def check(repo: Path, patches: Path) -> tuple[int, dict, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "patchkeeper", "check", "--ref", "HEAD", "--json",
         "--install", str(repo), "--patches", str(patches)],
        capture_output=True, text=True, check=False, env={**os.environ, **GIT_ID},
    )  # fmt: skip
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


NAMES = [b"caf\xe9.txt", b"na\xefve.txt"]
SETS = {"one file": (NAMES[:1], False), "two patches": (NAMES, False), "one patch": (NAMES, True)}


@pytest.mark.parametrize(("names", "one_patch"), SETS.values(), ids=SETS.keys())
def test_a_conflict_on_a_file_name_that_is_not_utf8(
    tmp_path: Path, names: list[bytes], one_patch: bool
) -> None:
    repo, patches = world(tmp_path, names, upstream_line=6, one_patch=one_patch)
    code, document, stderr = check(repo, patches)
    assert code == 3, stderr
    results = document["targets"][0]["patches"]
    assert {r["outcome"] for r in results} == {"conflict"}


@pytest.mark.parametrize(("names", "one_patch"), SETS.values(), ids=SETS.keys())
def test_a_3way_merge_on_a_file_name_that_is_not_utf8(
    tmp_path: Path, names: list[bytes], one_patch: bool
) -> None:
    repo, patches = world(tmp_path, names, upstream_line=4, one_patch=one_patch)  # merges
    code, document, stderr = check(repo, patches)
    assert code == 0, stderr
    results = document["targets"][0]["patches"]
    assert {r["outcome"] for r in results} == {"merged-3way"}


def _pk(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "patchkeeper", *map(str, args)],
        capture_output=True, text=True, check=False, env={**os.environ, **GIT_ID},
    )  # fmt: skip


def test_apply_status_and_unapply_on_a_file_name_that_is_not_utf8(tmp_path: Path) -> None:
    """The work tree's side: its content hashed in, the entries written, the record kept."""
    repo, patches = world(tmp_path, NAMES[:1], upstream_line=1)  # the fix applies at v2
    target = Path(os.fsdecode(os.path.join(os.fsencode(repo), NAMES[0])))
    where = ("--install", repo, "--patches", patches)
    applied = _pk("apply", *where)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert b"line 6 local\n" in target.read_bytes()
    status = _pk("status", *where)
    assert status.returncode == 0, status.stdout + status.stderr
    removed = _pk("unapply", *where)
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert b"line 6 local\n" not in target.read_bytes()
