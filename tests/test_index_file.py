"""index_file.entry_ids reads git's own index files as `git ls-files -s` does (stage 0), and
says None for a format it does not read; the offset guard reads what was there before and
after a moved patch in one process."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers import (
    commit_files,
    diff_of,
    git,
    make_repo,
    patch_text,
    traced_check,
    write_patch_set,
)

from patchkeeper.install.plumbing.index_file import entry_ids


def ls_files(repo: Path) -> dict[str, str]:
    """Path -> blob id of each stage-0 entry, as git lists them."""
    listed = subprocess.run(
        ["git", "ls-files", "-s", "-z"], cwd=repo, capture_output=True, check=True
    ).stdout.decode()
    entries = (record.split("\t", 1) for record in listed.split("\0") if record)
    return {path: info.split()[1] for info, path in entries if info.split()[2] == "0"}


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_ids_are_those_git_lists(tmp_path: Path, object_format: str) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", f"--object-format={object_format}")
    names = ["a", "b" * 7, "dir/" + "c" * 30, "d" * 9 + ".txt", "é ü.txt"]
    commit_files(repo, {name: f"{name} content\n" for name in names}, "files")
    (repo / "new.txt").write_text("intent\n")
    git(repo, "add", "-N", "new.txt")  # an extended flag: the index becomes version 3
    data = (repo / ".git" / "index").read_bytes()
    assert int.from_bytes(data[4:8], "big") == 3
    found = entry_ids(data, 20 if object_format == "sha1" else 32)
    assert found == ls_files(repo)


def test_a_conflict_stage_is_left_out_and_version_4_is_not_read(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"f.txt": "one\n", "g.txt": "two\n"})
    one = git(repo, "hash-object", "-w", "--stdin", stdin=b"base\n")
    git(repo, "update-index", "--index-info", stdin=f"100644 {one} 1\tf.txt\n".encode())
    data = (repo / ".git" / "index").read_bytes()
    found = entry_ids(data, 20)
    assert found is not None and "f.txt" in found and found["f.txt"] != one
    git(repo, "update-index", "--index-version", "4")
    assert entry_ids((repo / ".git" / "index").read_bytes(), 20) is None
    assert entry_ids(b"DIRC\0\0\0\2\0\0\0\5", 20) is None  # five entries promised, none there
    assert entry_ids(None, 20) is None


def test_a_split_or_cut_index_is_not_read(tmp_path: Path) -> None:
    """Under core.splitIndex git splits a scratch index too: its file then holds only some
    entries (the rest in a shared index), so reading it alone would miss paths."""
    repo = make_repo(tmp_path / "repo", {"f.txt": "one\n", "g.txt": "two\n"})
    index = repo / ".git" / "index"
    assert entry_ids(index.read_bytes()[:-7], 20) is None  # cut short
    git(repo, "update-index", "--split-index")
    assert b"link" in index.read_bytes()
    assert entry_ids(index.read_bytes(), 20) is None


def test_a_moved_patch_is_guarded_with_one_read(tmp_path: Path) -> None:
    text = "".join(f"line {n}\n" for n in range(40))
    repo = make_repo(tmp_path / "repo", {"f.txt": text})
    diff = diff_of(repo, {"f.txt": text.replace("line 20\n", "line 20 fixed\n")})
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(diff)})
    commit_files(repo, {"f.txt": "new 1\nnew 2\nnew 3\n" + text}, "upstream adds lines on top")
    proc, commands = traced_check(repo, patches, tmp_path / "trace")
    assert proc.returncode == 0, proc.stderr
    assert '"outcome": "applied-offset"' in proc.stdout
    reads = [c for c in commands if c.startswith("cat-file") and "--batch-check" not in c]
    assert reads == ["cat-file --batch"], commands  # main: `cat-file blob :f.txt` twice
