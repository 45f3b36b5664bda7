"""Every outcome word, write-once, idempotence and exact reversal, on real git repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import (
    commit_files,
    diff_of,
    git,
    make_repo,
    outcomes,
    patch_text,
    run_cli,
    run_json,
    tree_snapshot,
    write_patch_set,
)

LINES = "".join(f"line {n}\n" for n in range(1, 41))


def replace(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "up", {"app.py": LINES, "other.py": LINES}, tag="v1.0.0")


def fix(repo: Path, old: str = "line 10\n", new: str = "line 10 fixed\n", **fields: str) -> str:
    text = (repo / "app.py").read_text()
    return patch_text(diff_of(repo, {"app.py": replace(text, old, new)}), **fields)


def test_apply_is_written_once_recorded_and_idempotent(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": fix(repo)})
    code, doc = run_json("status", "--install", repo, "--patches", patches)
    assert (code, outcomes(doc)) == (5, {"fix": "pending"})
    assert doc["patches"][0]["would"] == "applied"
    assert doc["patches"][0]["in_place"] is False

    code, doc = run_json("apply", "--install", repo, "--patches", patches)
    assert (code, outcomes(doc)) == (0, {"fix": "applied"})
    assert "line 10 fixed" in (repo / "app.py").read_text()
    assert git(repo, "diff", "--cached") == ""  # the install's own index is untouched
    assert (repo / ".git/patchkeeper/applied.json").is_file()

    before = tree_snapshot(repo)
    code, doc = run_json("apply", "--install", repo, "--patches", patches)
    assert (code, outcomes(doc)) == (0, {"fix": "already-applied"})
    after = tree_snapshot(repo)
    assert {k: v for k, v in before.items() if "applied.json" not in k} == {
        k: v for k, v in after.items() if "applied.json" not in k
    }


def test_offset_is_reported_with_file_hunk_and_lines(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": fix(repo)})
    commit_files(repo, {"app.py": "new 1\nnew 2\nnew 3\n" + LINES}, "moved", tag="v1.1.0")
    code, doc = run_json("check", "--install", repo, "--patches", patches, "--ref", "v1.1.0")
    assert code == 0
    result = doc["targets"][0]["patches"][0]
    assert result["outcome"] == "applied-offset"
    assert result["offsets"] == [{"file": "app.py", "hunk": 1, "line": 10, "offset": 3}]


def test_three_way_merge_is_its_own_outcome(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": fix(repo)})
    # Upstream changes a context line two lines above the fix: no direct apply, clean merge.
    commit_files(repo, {"app.py": replace(LINES, "line 8\n", "line 8 upstream\n")}, "ctx")
    code, doc = run_json("apply", "--install", repo, "--patches", patches)
    assert code == 0, doc
    assert outcomes(doc) == {"fix": "merged-3way"}
    assert doc["patches"][0]["merged_files"] == ["app.py"]
    text = (repo / "app.py").read_text()
    assert "line 8 upstream\n" in text and "line 10 fixed\n" in text


def test_conflict_names_file_hunk_and_expected_lines(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": fix(repo)})
    commit_files(repo, {"app.py": replace(LINES, "line 10\n", "line 10 upstream\n")}, "clash")
    before = tree_snapshot(repo)
    code, doc = run_json("apply", "--install", repo, "--patches", patches)
    assert code == 3
    result = doc["patches"][0]
    assert result["outcome"] == "conflict"
    (conflict,) = result["conflicts"]
    assert (conflict["file"], conflict["hunk"]) == ("app.py", 1)
    assert conflict["header"].startswith("@@ -7,7 +7,7 @@")
    assert "line 10" in conflict["expected"]
    assert conflict["mismatches"] == [
        {"line": 10, "expected": "line 10", "found": "line 10 upstream"}
    ]
    assert tree_snapshot(repo) == before  # nothing written, no state recorded


def test_conflict_holds_back_a_later_patch_on_the_same_file(repo: Path, tmp_path: Path) -> None:
    first = fix(repo)
    second = fix(repo, "line 30\n", "line 30 fixed\n")
    other = patch_text(diff_of(repo, {"other.py": replace(LINES, "line 5\n", "line 5 x\n")}))
    patches = write_patch_set(
        tmp_path / "ps", {"first.patch": first, "second.patch": second, "other.patch": other}
    )
    commit_files(repo, {"app.py": replace(LINES, "line 10\n", "line 10 upstream\n")}, "clash")
    code, doc = run_json("apply", "--install", repo, "--patches", patches)
    assert code == 3
    assert outcomes(doc) == {"first": "conflict", "second": "conflict", "other": "applied"}
    assert "held back" in doc["patches"][1]["detail"]
    assert "line 30 fixed" not in (repo / "app.py").read_text()
    assert "line 5 x" in (repo / "other.py").read_text()


def test_upstream_has_it_by_content_and_by_header(repo: Path, tmp_path: Path) -> None:
    by_content = fix(repo)
    by_header = fix(repo, "line 30\n", "line 30 fixed\n", upstream_fixed_in=">=1.2")
    patches = write_patch_set(
        tmp_path / "ps", {"content.patch": by_content, "header.patch": by_header}
    )
    commit_files(repo, {"app.py": replace(LINES, "line 10\n", "line 10 fixed\n")}, "merged")
    git(repo, "tag", "v1.2.0")
    code, doc = run_json("apply", "--install", repo, "--patches", patches)
    assert code == 0
    assert outcomes(doc) == {"content": "upstream-has-it", "header": "upstream-has-it"}
    assert "line 30 fixed" not in (repo / "app.py").read_text()


def test_not_applicable_when_no_variant_matches(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(
        tmp_path / "ps",
        {
            "fix/old.patch": fix(repo, applies_to="<1.0"),
            "fix/new.patch": fix(repo, applies_to=">=2.0"),
        },
    )
    code, doc = run_json("status", "--install", repo, "--patches", patches)
    assert (code, outcomes(doc)) == (0, {"fix": "not-applicable"})
    assert "1.0.0" in doc["patches"][0]["detail"]


def test_variant_is_chosen_by_version(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(
        tmp_path / "ps",
        {
            "fix/v1.patch": fix(repo, applies_to=">=1.0,<2.0"),
            "fix/v2.patch": fix(repo, "line 20\n", "line 20 v2\n", applies_to=">=2.0"),
        },
    )
    commit_files(repo, {"README": "two\n"}, "two", tag="v2.0.0")
    code, doc = run_json(
        "check", "--install", repo, "--patches", patches, "--ref", "v1.0.0", "--ref", "v2.0.0"
    )
    assert code == 0
    variants = [t["patches"][0]["variant"] for t in doc["targets"]]
    assert variants == ["fix/v1.patch", "fix/v2.patch"]


def test_invalid_when_git_cannot_read_the_diff(repo: Path, tmp_path: Path) -> None:
    broken = "\n".join(
        ["diff --git a/app.py b/app.py", "new file mode 100644", "--- a/app.py", "+++ b/app.py",
         "@@ -1,2 +1,2 @@", " line 1", "-line 2", "+line two", ""]
    )  # fmt: skip
    patches = write_patch_set(tmp_path / "ps", {"broken.patch": patch_text(broken)})
    code, doc = run_json("check", "--install", repo, "--patches", patches, "--ref", "HEAD")
    assert code == 3
    assert doc["targets"][0]["patches"][0]["outcome"] == "invalid"


def test_drifted_and_unapply_leaves_it(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": fix(repo)})
    assert run_cli("apply", "--install", repo, "--patches", patches).returncode == 0
    app = repo / "app.py"
    app.write_text(replace(app.read_text(), "line 10 fixed\n", "line 10 hand-edited\n"))
    code, doc = run_json("status", "--install", repo, "--patches", patches)
    assert (code, outcomes(doc)) == (5, {"fix": "drifted"})
    code, doc = run_json("unapply", "--install", repo, "--patches", patches)
    assert (code, outcomes(doc)) == (5, {"fix": "drifted"})
    assert "line 10 hand-edited" in app.read_text()


def test_unapply_removes_exactly_what_was_written(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": fix(repo)})
    (repo / "other.py").write_text(LINES + "user edit elsewhere\n")
    assert run_cli("apply", "--install", repo, "--patches", patches).returncode == 0
    app = repo / "app.py"
    app.write_text(replace(app.read_text(), "line 30\n", "line 30 by the user\n"))
    proc = run_cli("unapply", "--install", repo, "--patches", patches)
    assert proc.returncode == 0, proc.stderr
    assert app.read_text() == replace(LINES, "line 30\n", "line 30 by the user\n")
    assert (repo / "other.py").read_text().endswith("user edit elsewhere\n")
    code, doc = run_json("status", "--install", repo, "--patches", patches)
    assert (code, outcomes(doc)) == (5, {"fix": "pending"})  # pending again


def test_user_edit_in_the_same_file_is_kept_when_patch_applies_on_top(
    repo: Path, tmp_path: Path
) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": fix(repo)})
    app = repo / "app.py"
    app.write_text(replace(LINES, "line 35\n", "line 35 mine\n"))
    code, doc = run_json("apply", "--install", repo, "--patches", patches)
    assert (code, outcomes(doc)) == (0, {"fix": "applied"})
    assert "line 35 mine" in app.read_text() and "line 10 fixed" in app.read_text()


def test_present_but_unrecorded_content_is_adopted(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": fix(repo)})
    (repo / "app.py").write_text(replace(LINES, "line 10\n", "line 10 fixed\n"))
    code, doc = run_json("apply", "--install", repo, "--patches", patches)
    assert (code, outcomes(doc)) == (0, {"fix": "already-applied"})
    assert doc["patches"][0]["recorded"] is False
    assert run_cli("unapply", "--install", repo, "--patches", patches).returncode == 0
    assert (repo / "app.py").read_text() == LINES


def test_a_changed_patch_file_replaces_what_was_written(repo: Path, tmp_path: Path) -> None:
    better = fix(repo, new="line 10 fixed better\n")
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": fix(repo)})
    assert run_cli("apply", "--install", repo, "--patches", patches).returncode == 0
    (patches / "fix.patch").write_text(better)
    code, doc = run_json("apply", "--install", repo, "--patches", patches)
    assert (code, outcomes(doc)) == (0, {"fix": "applied"})
    text = (repo / "app.py").read_text()
    assert "line 10 fixed better\n" in text and "line 10 fixed\n" not in text


def test_a_new_file_patch_applies_and_unapplies(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(
        tmp_path / "ps", {"new.patch": patch_text(diff_of(repo, {"pkg/new.py": "x = 1\n"}))}
    )
    assert run_cli("apply", "--install", repo, "--patches", patches).returncode == 0
    assert (repo / "pkg/new.py").read_text() == "x = 1\n"
    assert run_cli("unapply", "--install", repo, "--patches", patches).returncode == 0
    assert not (repo / "pkg/new.py").exists()


def test_check_touches_neither_work_tree_nor_head(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": fix(repo)})
    head = git(repo, "rev-parse", "HEAD")
    before = tree_snapshot(repo)
    proc = run_cli("check", "--install", repo, "--patches", patches, "--ref", "v1.0.0")
    assert proc.returncode == 0, proc.stderr
    assert "applied" in proc.stdout
    assert tree_snapshot(repo) == before and git(repo, "rev-parse", "HEAD") == head


def test_a_changed_patch_that_conflicts_keeps_the_old_version(repo: Path, tmp_path: Path) -> None:
    clashing = fix(repo, "line 11\n", "line 11 other\n")  # its context needs the old line 10
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": fix(repo)})
    assert run_cli("apply", "--install", repo, "--patches", patches).returncode == 0
    (patches / "fix.patch").write_text(clashing.replace(" line 10\n", " line 10 elsewhere\n"))
    code, doc = run_json("apply", "--install", repo, "--patches", patches)
    assert (code, outcomes(doc)) == (3, {"fix": "conflict"})
    assert any("stays in place" in note for note in doc["patches"][0]["notes"])
    assert "line 10 fixed" in (repo / "app.py").read_text()


def test_status_names_a_stash_holding_a_patch(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": fix(repo)})
    assert run_cli("apply", "--install", repo, "--patches", patches).returncode == 0
    git(repo, "stash", "push", "--include-untracked", "-m", "hermes-update-autostash-20261129")
    code, doc = run_json("status", "--install", repo, "--patches", patches)
    assert code == 5
    assert doc["patches"][0]["outcome"] == "pending"  # pending again, not "drifted"
    notes = doc["patches"][0]["notes"]
    assert any("stash@{0} On main: hermes-update-autostash-20261129 holds" in n for n in notes)
    assert any("stash patch-content (fix)" in note for note in doc["notes"])


def test_status_notes_a_recorded_patch_that_left_the_series(repo: Path, tmp_path: Path) -> None:
    other = patch_text(diff_of(repo, {"other.py": replace(LINES, "line 5\n", "line 5 x\n")}))
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": fix(repo), "other.patch": other})
    assert run_cli("apply", "--install", repo, "--patches", patches).returncode == 0
    (patches / "series").write_text("fix.patch\n")
    (patches / "other.patch").unlink()
    code, doc = run_json("status", "--install", repo, "--patches", patches)
    assert code == 5
    assert any(f"{patches} does not hold other, applied from {patches}" in n for n in doc["notes"])
    assert run_cli("unapply", "other", "--install", repo, "--patches", patches).returncode == 0
    assert (repo / "other.py").read_text() == LINES


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("crlf.txt", b"".join(b"row %d\r\n" % n for n in range(1, 12))),
        ("feed.c", b"int a;\n\x0c\nint b;\nint c;\nint d;\n\x0c\nint e;\n"),
    ],
)
def test_patch_bytes_survive_as_written(name: str, content: bytes, tmp_path: Path) -> None:
    """CRLF lines and form feeds are bytes of the diff, not line breaks to normalise."""
    repo = make_repo(tmp_path / "up", {"README": "x\n"}, tag="v1.0.0")
    (repo / name).write_bytes(content)
    git(repo, "add", name)
    git(repo, "commit", "-qm", "add")
    changed = content.replace(b"int c;", b"int c = 1;").replace(b"row 6\r", b"row six\r")
    (repo / name).write_bytes(changed)
    diff = subprocess.run(["git", "diff"], cwd=repo, capture_output=True, check=True).stdout
    git(repo, "checkout", "--", name)
    patches = tmp_path / "ps"
    patches.mkdir()
    (patches / "fix.patch").write_bytes(
        b"Description: bytes\nSmoke: none (a test fixture)\n---\n" + diff
    )
    (patches / "series").write_text("fix.patch\n")
    code, doc = run_json("apply", "--install", repo, "--patches", patches)
    assert (code, outcomes(doc)) == (0, {"fix": "applied"})
    assert (repo / name).read_bytes() == changed


def test_quoted_paths_with_spaces_and_non_ascii_round_trip(tmp_path: Path) -> None:
    """git quotes such paths in diffs (`"a/d\\303\\266cs"`); they are the same files."""
    name = "döcs dir/nöte ü.md"
    repo = make_repo(tmp_path / "up", {name: LINES, "sp ace.txt": LINES}, tag="v1.0.0")
    edits = {name: replace(LINES, "line 5\n", "line 5 fixed\n"), "sp ace.txt": LINES + "x\n"}
    diff = diff_of(repo, edits)
    assert '"a/d\\303\\266cs dir/n\\303\\266te \\303\\274.md"' in diff
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(diff)})
    args = ("--install", repo, "--patches", patches)
    code, doc = run_json("apply", *args)
    assert (code, outcomes(doc)) == (0, {"fix": "applied"})
    assert (repo / name).read_text() == edits[name]
    code, doc = run_json("status", *args)
    assert (code, outcomes(doc)) == (0, {"fix": "already-applied"})
    assert run_cli("unapply", *args).returncode == 0
    assert (repo / name).read_text() == LINES and (repo / "sp ace.txt").read_text() == LINES
