"""`record` and `refresh`: patch files written from the work tree, other patches kept out."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from tests.helpers import (
    commit_files,
    diff_of,
    git,
    make_repo,
    outcomes,
    patch_text,
    run_cli,
    run_json,
    write_patch_set,
)

LINES = "".join(f"line {n}\n" for n in range(1, 41))


def test_record_captures_only_the_users_change(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "up", {"app.py": LINES}, tag="v0.21.5")
    existing = patch_text(diff_of(repo, {"app.py": LINES.replace("line 5\n", "line 5 a\n")}))
    patches = write_patch_set(tmp_path / "ps", {"a.patch": existing})
    assert run_cli("apply", "--install", repo, "--patches", patches).returncode == 0
    app = repo / "app.py"
    app.write_text(app.read_text().replace("line 30\n", "line 30 new fix\n"))
    (repo / "added.py").write_text("NEW = True\n")

    proc = run_cli(
        "record", "new-fix", "--path", "app.py", "--path", "added.py", "-m", "Fix thirty",
        "--install", repo, "--patches", patches,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "note: new-fix names no smoke check yet: add `Smoke: CHECK`" in proc.stdout
    text = (patches / "new-fix.patch").read_text()
    assert "Description: Fix thirty\n" in text
    assert "Applies-To: >=0.21\n" in text  # open-ended: never expires by itself
    assert f"Last-Update: {dt.date.today().isoformat()}\n" in text
    assert "+line 30 new fix" in text and "+NEW = True" in text
    assert "line 5 a" not in text  # patch a's line belongs to patch a
    assert (patches / "series").read_text().splitlines() == ["a.patch", "new-fix.patch"]
    code, doc = run_json("status", "--install", repo, "--patches", patches)
    # In place; a recorded patch names no smoke check yet, so it is not proven (issue 26 item 7)
    assert (code, outcomes(doc)) == (5, {"a": "already-applied", "new-fix": "already-applied"})
    [unchecked] = [note for note in doc["notes"] if "no smoke check" in note]
    assert unchecked.startswith("new-fix is in place, but no smoke check proves it: name one ")
    assert run_cli("lint", "--patches", patches).returncode == 0


def test_record_refuses_an_existing_name_and_no_changes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "up", {"app.py": LINES}, tag="v1.0.0")
    patches = write_patch_set(
        tmp_path / "ps", {"a.patch": patch_text(diff_of(repo, {"app.py": LINES + "x\n"}))}
    )
    args = ("--install", repo, "--patches", patches, "--path", "app.py", "-m", "m")
    proc = run_cli("record", "a", *args)
    assert proc.returncode == 2 and "exists already" in proc.stderr
    proc = run_cli("record", "b", *args)
    assert proc.returncode == 2 and "no changes to app.py" in proc.stderr
    assert not (patches / "b.patch").exists()


def test_refresh_after_a_manual_conflict_fix(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "up", {"app.py": LINES}, tag="v1.0.0")
    fix = patch_text(
        diff_of(repo, {"app.py": LINES.replace("line 10\n", "line 10 fixed\n")}),
        bug="https://example.invalid/1",
    )
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": fix})
    moved = LINES.replace("line 10\n", "line 10 upstream\n")
    commit_files(repo, {"app.py": moved}, "upstream moved", tag="v1.1.0")
    assert run_cli("apply", "--install", repo, "--patches", patches).returncode == 3
    (repo / "app.py").write_text(moved.replace("line 10 upstream\n", "line 10 fixed again\n"))

    proc = run_cli("refresh", "fix", "--install", repo, "--patches", patches)
    assert proc.returncode == 0, proc.stderr
    text = (patches / "fix.patch").read_text()
    assert "Bug: https://example.invalid/1" in text
    assert "-line 10 upstream\n+line 10 fixed again\n" in text
    code, doc = run_json("status", "--install", repo, "--patches", patches)
    assert (code, outcomes(doc)) == (0, {"fix": "already-applied"})
    assert run_cli("unapply", "--install", repo, "--patches", patches).returncode == 0
    assert (repo / "app.py").read_text() == moved


def test_record_refuses_a_message_that_would_forge_headers(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "up", {"app.py": LINES}, tag="v1.0.0")
    patches = write_patch_set(tmp_path / "ps", {})
    (repo / "app.py").write_text(LINES + "more\n")
    proc = run_cli(
        "record", "fix", "--path", "app.py", "-m", "one\nInjected: x",
        "--install", repo, "--patches", patches,
    )  # fmt: skip
    assert proc.returncode == 2 and "must be one non-empty line" in proc.stderr
    assert sorted(p.name for p in patches.iterdir()) == ["series"]
    assert run_cli("lint", "--patches", patches).returncode == 0


def test_record_after_a_patch_that_adds_a_file_keeps_that_file_out(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "up", {"app.py": LINES}, tag="v1.0.0")
    adds = patch_text(diff_of(repo, {"docs/new.md": "new\n"}))
    patches = write_patch_set(tmp_path / "ps", {"adds.patch": adds})
    assert run_cli("apply", "--install", repo, "--patches", patches).returncode == 0
    (repo / "app.py").write_text(LINES + "mine\n")
    args = ("--install", repo, "--patches", patches)
    assert run_cli("record", "mine", "--path", "app.py", "-m", "m", *args).returncode == 0
    text = (patches / "mine.patch").read_text()
    assert "docs/new.md" not in text and "+mine" in text
    code, doc = run_json("status", *args)
    assert (code, outcomes(doc)) == (5, {"adds": "already-applied", "mine": "already-applied"})
    assert [n.split(" ")[0] for n in doc["notes"]] == ["mine"]  # recorded: no Smoke: yet


def test_record_refuses_a_directory_and_an_empty_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "up", {"pkg/app.py": LINES}, tag="v1.0.0")
    patches = write_patch_set(tmp_path / "ps", {})
    (repo / "pkg/app.py").write_text(LINES + "mine\n")
    args = ("-m", "m", "--install", repo, "--patches", patches)
    proc = run_cli("record", "mine", "--path", "pkg", *args)
    assert proc.returncode == 2 and "a directory; name the files" in proc.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    (empty / "a.py").write_text("x\n")
    proc = run_cli("record", "mine", "--path", "a.py", "-m", "m", "--install", empty,
                   "--patches", patches)  # fmt: skip
    assert proc.returncode == 2 and "HEAD does not name a commit yet" in proc.stderr
    assert sorted(p.name for p in patches.iterdir()) == ["series"]
