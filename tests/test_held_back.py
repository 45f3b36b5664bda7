"""Held-back patches are judged alone too (issue 17, item 3): a patch that shares a file
with an earlier failed one is not written, and its detail says how it fares without it."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import commit_files, diff_of, make_repo, patch_text, run_json, write_patch_set

LINES = "".join(f"line {n}\n" for n in range(1, 41))


def edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


def fix(repo: Path, line: int, file: str = "cron/x.py") -> str:
    return patch_text(diff_of(repo, {file: edit(LINES, f"line {line}\n", f"line {line} fixed\n")}))


def details(repo: Path, tmp_path: Path, patches: dict[str, str]) -> dict[str, tuple[str, str]]:
    root = write_patch_set(tmp_path / "ps", patches)
    commit_files(
        repo, {"cron/x.py": edit(LINES, "line 10\n", "line 10 upstream\n")}, "1.1", "v1.1.0"
    )
    code, doc = run_json("check", "--install", repo, "--patches", root, "--ref", "v1.1.0")
    assert code == 3
    return {p["name"]: (p["outcome"], p["detail"]) for p in doc["targets"][0]["patches"]}


def test_a_held_back_patch_that_applies_on_its_own_says_so(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "up", {"cron/x.py": LINES}, tag="v1.0.0")
    found = details(repo, tmp_path, {"p.patch": fix(repo, 10), "q.patch": fix(repo, 30)})
    assert found["p"][0] == "conflict"
    assert found["q"] == (
        "conflict",
        "held back: shares cron/x.py with p, which failed; applies on its own",
    )


def test_after_a_patch_that_goes_ahead_it_says_on_what(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "up", {"cron/x.py": LINES}, tag="v1.0.0")
    patches = {"a.patch": fix(repo, 20), "p.patch": fix(repo, 10), "q.patch": fix(repo, 35)}
    found = details(repo, tmp_path, patches)
    assert found["a"][0] == "applied"
    assert found["q"][1].endswith("which failed; applies without it, on the patches before it")


def test_after_another_held_back_patch_nothing_is_claimed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "up", {"cron/x.py": LINES}, tag="v1.0.0")
    patches = {"p.patch": fix(repo, 10), "q.patch": fix(repo, 25), "r.patch": fix(repo, 35)}
    found = details(repo, tmp_path, patches)
    assert found["r"] == ("conflict", "held back: shares cron/x.py with q, which is held back too")
