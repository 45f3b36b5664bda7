"""A patch on which git itself crashes is `invalid`, never a crash of ours (issue 9, item 1).

git 2.39 aborts (SIGABRT) on a diff whose `new file mode` line is mangled into `lew file
mode`, leaving its lock on the index. The patch must come out `invalid`, its scratch state
cleaned, the other patches judged as usual, and `lint` must catch it first.
"""

from __future__ import annotations

from pathlib import Path

from helpers import diff_of, make_repo, outcomes, patch_text, run_cli, run_json, write_patch_set

LINES = "".join(f"line {n}\n" for n in range(1, 11))


def world(tmp_path: Path) -> tuple[Path, Path]:
    repo = make_repo(tmp_path / "repo", {"app.py": LINES})
    good = patch_text(diff_of(repo, {"app.py": LINES.replace("line 3\n", "fixed\n")}))
    new_file = diff_of(repo, {"new.py": "print('new')\n"})
    assert "new file mode" in new_file
    crashing = patch_text(new_file.replace("new file mode", "lew file mode"))
    patches = write_patch_set(tmp_path / "ps", {"crash.patch": crashing, "good.patch": good})
    return repo, patches


def test_lint_names_a_patch_git_cannot_read(tmp_path: Path) -> None:
    _, patches = world(tmp_path)
    proc = run_cli("lint", "--patches", patches)
    assert proc.returncode == 2
    [line] = [line for line in proc.stdout.splitlines() if "crash.patch" in line]
    assert "git cannot read the diff" in line and "SIGABRT" in line


def test_status_and_apply_judge_it_invalid_and_carry_on(tmp_path: Path) -> None:
    repo, patches = world(tmp_path)
    where = ("--install", repo, "--patches", patches)
    for _ in range(2):  # a second run finds no lock left behind by the first
        code, document = run_json("status", *where)
        assert (code, outcomes(document)) == (3, {"crash": "invalid", "good": "pending"})
    code, document = run_json("apply", *where)
    assert (code, outcomes(document)) == (3, {"crash": "invalid", "good": "applied"})
    assert "fixed\n" in (repo / "app.py").read_text()
    assert not (repo / "new.py").exists()
    code, document = run_json("check", "--ref", "HEAD", *where)
    assert code == 3 and outcomes(document)["crash"] == "invalid"
