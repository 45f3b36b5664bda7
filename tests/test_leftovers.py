"""`patchkeeper leftovers`: find, classify, show, restore (merge-tree preview) and drop safely."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers import (
    GIT_ID,
    commit_files,
    diff_of,
    git,
    make_repo,
    patch_text,
    run_cli,
    tree_snapshot,
    write_patch_set,
)

LINES = "".join(f"line {n}\n" for n in range(1, 41))
FIXED = LINES.replace("line 10\n", "line 10 fixed\n")
USER = LINES.replace("line 30\n", "line 30 by the operator\n")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "up", {"app.py": LINES, "other.py": LINES}, tag="v1.0.0")


@pytest.fixture
def patches(repo: Path, tmp_path: Path) -> Path:
    return write_patch_set(
        tmp_path / "ps", {"fix.patch": patch_text(diff_of(repo, {"app.py": FIXED}))}
    )


def park(repo: Path, files: dict[str, str], name: str = "20261001-120000") -> str:
    """What `hermes update` leaves: the changes stashed (untracked too) under its name."""
    for path, text in files.items():
        (repo / path).write_text(text)
    message = f"hermes-update-autostash-{name}"
    git(repo, "stash", "push", "--include-untracked", "-q", "-m", message)
    return git(repo, "rev-parse", "refs/stash")


def leftovers(repo: Path, patches: Path, *args: str):
    return run_cli("leftovers", *args, "--install", repo, "--patches", patches)


def listing(repo: Path, patches: Path) -> tuple[int, dict[str, dict]]:
    proc = leftovers(repo, patches, "--json")
    return proc.returncode, {item["id"]: item for item in json.loads(proc.stdout)["leftovers"]}


def test_each_leftover_is_classified_by_content(repo: Path, patches: Path) -> None:
    patch_only = park(repo, {"app.py": FIXED}, "20261001-120000")
    user_only = park(repo, {"other.py": USER, "notes.txt": "mine\n"}, "20261002-120000")
    mixed = park(repo, {"app.py": FIXED, "other.py": USER}, "20261003-120000")
    (repo / "other.py").write_text(USER)
    git(repo, "stash", "push", "-q", "-m", "wip: my own stash")  # not an update's leftover
    code, found = listing(repo, patches)
    assert code == 5
    assert {i: (x["kind"], x["classification"]) for i, x in found.items()} == {
        patch_only[:10]: ("stash", "patch-content"),
        user_only[:10]: ("stash", "user-content"),
        mixed[:10]: ("stash", "mixed"),
    }
    assert found[patch_only[:10]]["patches"] == ["fix"]
    assert found[user_only[:10]]["files"] == ["notes.txt", "other.py"]
    text = leftovers(repo, patches).stdout
    assert "patch-content (fix)" in text and "hermes-update-autostash-20261002" in text


def test_nothing_left_behind_is_exit_0(repo: Path, patches: Path) -> None:
    proc = leftovers(repo, patches)
    assert proc.returncode == 0 and "no leftovers" in proc.stdout


def test_show_prints_the_diff_with_untracked_files(repo: Path, patches: Path) -> None:
    sha = park(repo, {"other.py": USER, "notes.txt": "mine\n"})
    proc = leftovers(repo, patches, "show", sha[:10])
    assert proc.returncode == 0
    assert "+line 30 by the operator" in proc.stdout and "+mine" in proc.stdout


def test_restore_applies_a_clean_merge_and_keeps_a_backup(repo: Path, patches: Path) -> None:
    sha = park(repo, {"other.py": USER, "notes.txt": "mine\n"})
    (repo / "app.py").write_text(FIXED)  # something else changed in the tree since
    proc = leftovers(repo, patches, "restore", sha[:8])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (repo / "other.py").read_text() == USER and (repo / "notes.txt").is_file()
    assert (repo / "app.py").read_text() == FIXED
    assert git(repo, "stash", "list") == ""
    assert git(repo, "rev-parse", f"refs/patchkeeper/dropped/{sha[:10]}") == sha
    assert git(repo, "diff", "--cached") == ""  # the install's index is untouched


def test_restore_that_would_conflict_changes_nothing(repo: Path, patches: Path) -> None:
    sha = park(repo, {"other.py": USER})
    (repo / "other.py").write_text(LINES.replace("line 30\n", "line 30 upstream\n"))
    before = tree_snapshot(repo)
    proc = leftovers(repo, patches, "restore", sha[:10])
    assert proc.returncode == 5
    assert "would conflict in other.py" in proc.stdout and "nothing changed" in proc.stdout
    assert tree_snapshot(repo) == before
    assert git(repo, "rev-parse", "refs/stash") == sha


def test_drop_saves_a_backup_ref_first_and_prints_the_undo(repo: Path, patches: Path) -> None:
    sha = park(repo, {"other.py": USER})
    proc = leftovers(repo, patches, "drop", sha[:10])
    assert proc.returncode == 0, proc.stderr
    assert git(repo, "stash", "list") == ""
    assert git(repo, "rev-parse", f"refs/patchkeeper/dropped/{sha[:10]}") == sha
    undo = proc.stdout.split("undo: ", 1)[1].strip()
    assert undo.startswith(f"git -C {repo} stash store")
    subprocess.run(undo, shell=True, check=True, env={**os.environ, **GIT_ID})  # as printed
    assert git(repo, "rev-parse", "refs/stash") == sha


def test_autostash_state_file_is_a_leftover(repo: Path, patches: Path) -> None:
    (repo / "app.py").write_text(FIXED)
    sha = git(repo, "stash", "create")
    git(repo, "checkout", "-q", "--", "app.py")
    (repo / ".git/MERGE_AUTOSTASH").write_text(sha + "\n")
    code, found = listing(repo, patches)
    assert code == 5
    assert (found[sha[:10]]["kind"], found[sha[:10]]["classification"]) == (
        "autostash-file",
        "patch-content",
    )
    proc = leftovers(repo, patches, "drop", sha[:10])
    assert proc.returncode == 0 and not (repo / ".git/MERGE_AUTOSTASH").exists()


def test_unmerged_paths_are_listed_and_left_to_git(repo: Path, patches: Path) -> None:
    git(repo, "checkout", "-q", "-b", "side")
    commit_files(repo, {"other.py": USER}, "side")
    git(repo, "checkout", "-q", "main")
    commit_files(repo, {"other.py": LINES.replace("line 30\n", "line 30 main\n")}, "main")
    merge = subprocess.run(["git", "merge", "-q", "side"], cwd=repo, capture_output=True)
    assert merge.returncode != 0
    code, found = listing(repo, patches)
    assert code == 5 and found["unmerged"]["files"] == ["other.py"]
    proc = leftovers(repo, patches, "drop", "unmerged")
    assert proc.returncode == 2 and "finish or abort it first" in proc.stderr  # git's to resolve


def test_unknown_id_and_missing_id_are_one_line_errors(repo: Path, patches: Path) -> None:
    proc = leftovers(repo, patches, "show", "deadbeef00")
    assert proc.returncode == 2 and "no leftover 'deadbeef00'" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    proc = leftovers(repo, patches, "drop")
    assert proc.returncode == 2 and "needs an ID" in proc.stderr


def write_receipt(tmp_path: Path, name: str, content: bytes) -> Path:
    """A Hermes update receipt next to the install (HERMES_HOME unset: the install's parent)."""
    folder = tmp_path / "logs" / "update_receipts"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(content)
    return folder / name


def listing_without_hermes_home(repo: Path, patches: Path, monkeypatch) -> dict[str, dict]:
    monkeypatch.delenv("HERMES_HOME", raising=False)
    proc = leftovers(repo, patches, "--json")
    assert "Traceback" not in proc.stderr
    return {item["id"]: item for item in json.loads(proc.stdout)["leftovers"]}


def parked_receipt(sha: str) -> bytes:
    step = {"name": "local_changes_stash", "ok": False,
            "detail": f"parked: {sha} (restore hit conflicts)"}  # fmt: skip
    receipt = {"schema": 1, "started_at": "2026-10-01T12:00:00+00:00", "outcome": "success",
               "steps": [step]}  # fmt: skip
    return json.dumps(receipt, indent=2).encode()


@pytest.mark.parametrize("bom", [False, True], ids=["plain", "bom"])
def test_a_receipt_that_parked_the_stash_is_named_on_it(
    repo: Path, patches: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bom: bool
) -> None:
    stash = park(repo, {"other.py": USER})
    prefix = b"\xef\xbb\xbf" if bom else b""
    write_receipt(tmp_path, "update_20261001_120000_aaaaaaaa.json", prefix + parked_receipt(stash))
    write_receipt(tmp_path, "update_20260901_120000_bbbbbbbb.json", parked_receipt("f" * 40))
    found = listing_without_hermes_home(repo, patches, monkeypatch)
    assert found[stash[:10]]["notes"] == [
        "hermes update receipt update_20261001_120000_aaaaaaaa.json says parked"
    ]


def test_a_torn_receipt_is_a_note_not_a_traceback(
    repo: Path, patches: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stash = park(repo, {"other.py": USER})
    torn = write_receipt(tmp_path, "update_20261001_120000_aaaaaaaa.json", b'{"steps": [{"na')
    found = listing_without_hermes_home(repo, patches, monkeypatch)
    [note] = found[stash[:10]]["notes"]
    assert note.startswith(f"hermes update receipt {torn} could not be read (not JSON")


def test_a_stash_pushed_while_dropping_is_put_back(repo: Path) -> None:
    """`stash@{n}` names whatever is n-th now: a push in between must not cost the user."""
    from patchkeeper.leftovers.heal import _drop_stash_entry
    from patchkeeper.model.errors import UserError

    (repo / "app.py").write_text("old entry\n")
    git(repo, "stash", "push", "-q", "-m", "hermes-update-autostash-20261129-000000")
    parked = git(repo, "rev-parse", "stash@{0}")
    (repo / "app.py").write_text("the user's newer entry\n")
    git(repo, "stash", "push", "-q", "-m", "mine")
    mine = git(repo, "rev-parse", "stash@{0}")
    with pytest.raises(UserError, match="nothing was lost"):
        _drop_stash_entry(repo, "stash@{0}", parked)  # stale selector: now names the user's
    assert set(git(repo, "log", "-g", "--format=%H", "refs/stash").split()) == {parked, mine}
