"""The stash list read through GitPython's RefLog matches what git itself lists."""

from __future__ import annotations

from pathlib import Path

from helpers import git, make_repo

from patchkeeper.leftovers.reflog import read_reflog


def test_the_stash_reflog_matches_git_stash_list(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    for n in range(4):
        (repo / "a.txt").write_text(f"edit {n}\n")
        git(repo, "stash", "push", "-q", "-m", f"message {n}")
    git(repo, "stash", "drop", "-q", "stash@{1}")  # a hole in the middle is rewritten away
    listed = git(repo, "stash", "list", "--format=%gd %H %gs").splitlines()

    entries = read_reflog(repo / ".git", "refs/stash")
    assert [f"{e.selector} {e.sha} {e.message}" for e in entries] == listed
    assert [e.message for e in entries] == ["On main: message 3", "On main: message 1",
                                            "On main: message 0"]  # fmt: skip
    assert all(entry.time > 0 for entry in entries)


def test_no_stash_is_an_empty_list(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    assert read_reflog(repo / ".git", "refs/stash") == []
