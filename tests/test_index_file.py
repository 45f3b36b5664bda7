"""install/index_file.py reads blob ids from index files git writes, exactly as
`git ls-files -s` lists them, and says None for the layouts it does not read (issue 30: the
offset guard's two reads of one file in one `cat-file --batch`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from patchkeeper.install.plumbing.index_file import blob_ids
from tests.helpers import GIT_ID, git
from tests.test_check_counts import ten_patches_one_moved

FILES = {"a.py": "a\n", "dir/b.txt": "b\n", "dir/sub/c d.md": "c\n", "é.txt": "e\n"}


def repo_with_index(tmp_path: Path, *init: str, **config: str) -> Path:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", *init, str(repo)], check=True)
    for key, value in config.items():
        git(repo, "config", key.replace("_", "."), value)
    for name, text in FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    # A name of 4,096 bytes or more (its length flag then says 0xFFF): in the index only.
    blob = git(repo, "hash-object", "-w", "--stdin", stdin=b"long\n")
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{'long/' * 820}x")
    return repo


def listed(repo: Path) -> dict[str, str]:
    out = subprocess.run(
        ["git", "-c", "core.quotePath=false", "ls-files", "-s", "-z"],
        cwd=repo, capture_output=True, check=True, env={**os.environ, **GIT_ID},
    ).stdout  # fmt: skip
    found = {}
    for record in filter(None, out.split(b"\0")):
        info, _, name = record.partition(b"\t")
        found[name.decode()] = info.split()[1].decode()
    return found


@pytest.mark.parametrize(
    ("init", "config"),
    [((), {}), (("--object-format=sha256",), {}), ((), {"index_version": "3"})],
    ids=["v2", "sha256", "v3"],
)
def test_ids_are_the_ones_git_lists(tmp_path: Path, init: tuple[str, ...], config: dict) -> None:
    repo = repo_with_index(tmp_path, *init, **config)
    if config:  # an extended flag (intent to add) makes git write version 3 entries
        (repo / "new.txt").write_text("n\n")
        git(repo, "add", "-N", "new.txt")
    expected = listed(repo)
    data = (repo / ".git" / "index").read_bytes()
    assert data[7] == (3 if config else 2)  # the version git wrote
    assert blob_ids(data, [*expected, "not/there"]) == expected
    assert blob_ids(data, ["a.py"]) == {"a.py": expected["a.py"]}


def test_layouts_it_does_not_read_are_none(tmp_path: Path) -> None:
    repo = repo_with_index(tmp_path)
    index = repo / ".git" / "index"
    data = index.read_bytes()
    assert blob_ids(data[:-7], ["a.py"]) is None  # cut short
    assert blob_ids(b"DIRC" + data[4:100], ["a.py"]) is None
    git(repo, "update-index", "--index-version", "4")
    assert blob_ids(index.read_bytes(), ["a.py"]) is None  # compressed paths
    git(repo, "update-index", "--index-version", "2")
    assert blob_ids(index.read_bytes(), ["a.py"]) == {"a.py": listed(repo)["a.py"]}
    git(repo, "update-index", "--split-index")
    assert b"link" in index.read_bytes()
    assert blob_ids(index.read_bytes(), ["a.py"]) is None  # entries in the shared index


def test_a_scratch_index_read_otherwise_gives_the_same_result(tmp_path: Path) -> None:
    """index.version = 4, or core.splitIndex (the scratch index's entries then partly in a
    shared file): the offset guard reads each state on its own, with the same JSON."""
    repo, patches = ten_patches_one_moved(tmp_path)
    outputs = []
    for number, (key, value, expected) in enumerate(
        (
            ("index.version", "2", ["--batch"]),
            ("index.version", "4", ["blob", "blob"]),
            ("core.splitIndex", "true", ["blob", "blob"]),
        )
    ):
        git(repo, "config", key, value)
        trace = tmp_path / f"trace-{number}"
        proc = subprocess.run(
            [sys.executable, "-m", "patchkeeper", "check", "--json", "--install", str(repo),
             "--patches", str(patches), "--ref", "v1.1.0"],
            capture_output=True, text=True, check=False,
            env={**os.environ, **GIT_ID, "GIT_TRACE": str(trace)},
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
        reads = re.findall(r"git cat-file (--batch|blob)(?: |$)", trace.read_text(), re.M)
        assert reads == expected, key
        git(repo, "config", "--unset", key)
    assert outputs[0] == outputs[1] == outputs[2]
