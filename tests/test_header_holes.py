"""Holes in tolerant header reading (issue 17's review): a truncated file is not an empty
patch, and our own fields cannot vanish by a typo, by standing after `---`, by an empty
`Upstream-Has` scope or by a range that admits no version. Each is a problem naming file and
line; the patch is `invalid` and lint exits 2."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from patchkeeper.patchset.parse import parse_patch_file
from tests.helpers import diff_of, make_repo, run_cli, run_json, tree_snapshot, write_patch_set

REPO_ROOT = Path(__file__).resolve().parent.parent
LINES = "".join(f"line {n}\n" for n in range(1, 21))
FIXED = LINES.replace("line 5\n", "line 5 fixed\n")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "up", {"src/app.c": LINES}, tag="v1.0.0")


def problems_of(tmp_path: Path, text: str) -> list[tuple[int, str]]:
    path = tmp_path / "fix.patch"
    path.write_text(text)
    parsed, problems = parse_patch_file(path)
    assert parsed is None, "expected the patch to be refused"
    assert all(p.path == path for p in problems)
    return [(p.line, p.message) for p in problems]


def test_the_real_patch_cut_before_its_diff_is_refused(tmp_path: Path) -> None:
    patches = tmp_path / "patches"
    shutil.copytree(REPO_ROOT / "patches", patches)
    target = patches / "schema-once.patch"
    text = target.read_text()
    target.write_text(text[: text.index("diff --git")])  # header, Base:, Smoke: and `---`
    lint = run_cli("lint", "--patches", patches)
    assert lint.returncode == 2, lint.stdout + lint.stderr
    separator = text.split("\n").index("---") + 1
    assert f"{target}:{separator}: no diff after its header: truncated?" in lint.stdout


@pytest.mark.parametrize(
    "header",
    [
        "Description: x\nSmoke: ok\n",  # one of our own fields
        "Description: x\n---\n",  # the separator
        "From: A <a@example.org>\nDate: Tue, 3 Mar 2026 10:00:00 +0100\nSubject: x\n",  # mail
        "From 0123456789012345678901234567890123456789 Mon Sep 17 00:00:00 2001\nSubject: x\n",
        "Description: x\n\n src/app.c | 2 +-\n 1 file changed, 1 insertion(+)\n",  # diffstat
    ],
    ids=["own field", "separator", "mail header", "mbox line", "diffstat"],
)
def test_a_header_that_promises_a_diff_is_truncated_not_empty(header: str, tmp_path: Path) -> None:
    found = problems_of(tmp_path, header)
    assert [message for _, message in found] == ["no diff after its header: truncated?"]


def test_a_truncated_patch_is_invalid_and_never_already_applied(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"cut.patch": "Description: x\nSmoke: ok\n---\n"})
    (patches / "smoke").mkdir()
    (patches / "smoke" / "ok.py").write_text("def check(install):\n    return None\n")
    before = tree_snapshot(repo)
    code, applied = run_json("apply", "--install", repo, "--patches", patches)
    cut = next(p for p in applied["patches"] if p["name"] == "cut")
    assert cut["outcome"] == "invalid" and "truncated" in cut["detail"], applied
    assert code != 0 and tree_snapshot(repo) == before


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ("Applies-To : >=9.0", "Applies-To"),
        ("Applies To: >=9.0", "Applies-To"),
        ("applies_to: >=9.0", "Applies-To"),
        ("AppliesTo: >=9.0", "Applies-To"),
        ("Upstream fixed in: >=9.0", "Upstream-Fixed-In"),
        ("SMOKE : ok", "Smoke"),
    ],
)
def test_a_mistyped_own_field_is_a_problem(
    line: str, name: str, repo: Path, tmp_path: Path
) -> None:
    diff = diff_of(repo, {"src/app.c": FIXED})
    for text in (f"Description: x\n{line}\n---\n", f"Description: x\n\nfree text\n{line}\n---\n"):
        found = problems_of(tmp_path, text + diff)
        number = text.split("\n").index(line) + 1
        assert found == [(number, f"{line!r} is not read as {name}: write '{name}: VALUE'")]


def test_lint_names_file_and_line_of_a_mistyped_range(repo: Path, tmp_path: Path) -> None:
    diff = diff_of(repo, {"src/app.c": FIXED})
    patches = write_patch_set(
        tmp_path / "ps", {"fix.patch": "Description: x\nApplies To: >=9.0\n---\n" + diff}
    )
    lint = run_cli("lint", "--patches", patches)
    assert lint.returncode == 2
    assert (
        f"{patches / 'fix.patch'}:2: 'Applies To: >=9.0' is not read as Applies-To" in lint.stdout
    )


@pytest.mark.parametrize(
    "text",
    ["Smoke tests were run by hand.", "Based on the fix in 1.2.", "Upstream has a similar bug."],
)
def test_free_text_that_only_starts_like_a_field_stays_text(
    text: str, repo: Path, tmp_path: Path
) -> None:
    path = tmp_path / "fix.patch"
    path.write_text(f"Description: x\n\n{text}\n---\n" + diff_of(repo, {"src/app.c": FIXED}))
    parsed, problems = parse_patch_file(path)
    assert problems == [] and parsed is not None and parsed.header.free_text == (text,)


@pytest.mark.parametrize("field", ["Applies-To: >=9.0", "Smoke: ok", "Applies To: >=9.0"])
def test_an_own_field_after_the_separator_is_a_problem(
    field: str, repo: Path, tmp_path: Path
) -> None:
    diff = diff_of(repo, {"src/app.c": FIXED})
    name = "Smoke" if field.startswith("Smoke") else "Applies-To"
    found = problems_of(tmp_path, f"Description: x\n---\n{field}\n" + diff)
    assert found == [(3, f"{name} after the '---' line is not read: move it above '---'")]


def test_an_empty_upstream_has_scope_is_a_problem(repo: Path, tmp_path: Path) -> None:
    diff = diff_of(repo, {"src/app.c": FIXED})
    found = problems_of(tmp_path, "Description: x\nUpstream-Has: m.py::: x\n---\n" + diff)
    assert found == [(2, "Upstream-Has scope after 'm.py::' is empty: name it, or drop '::'")]


@pytest.mark.parametrize(
    ("field", "shown"),
    [
        ("Applies-To: >=1.0, <0.5", "Applies-To '>=1.0, <0.5' admits no version"),
        ("Applies-To: >1.0, <=1.0", "Applies-To '>1.0, <=1.0' admits no version"),
        ("Upstream-Fixed-In: ==2.0, <2.0", "Upstream-Fixed-In '==2.0, <2.0' admits no version"),
    ],
)
def test_a_range_that_admits_no_version_is_refused(
    field: str, shown: str, repo: Path, tmp_path: Path
) -> None:
    diff = diff_of(repo, {"src/app.c": FIXED})
    found = problems_of(tmp_path, f"Description: x\n{field}\n---\n" + diff)
    assert found == [(2, shown)]


def test_lint_and_apply_refuse_an_empty_range(repo: Path, tmp_path: Path) -> None:
    diff = diff_of(repo, {"src/app.c": FIXED})
    text = "Description: x\nApplies-To: >=1.0, <0.5\n---\n" + diff
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": text})
    lint = run_cli("lint", "--patches", patches)
    assert lint.returncode == 2
    assert f"{patches / 'fix.patch'}:2: Applies-To '>=1.0, <0.5' admits no version" in lint.stdout
    before = tree_snapshot(repo)
    code, applied = run_json("apply", "--install", repo, "--patches", patches)
    assert applied["patches"][0]["outcome"] == "invalid" and code != 0
    assert tree_snapshot(repo) == before


def test_a_range_with_versions_still_loads(repo: Path, tmp_path: Path) -> None:
    path = tmp_path / "fix.patch"
    diff = diff_of(repo, {"src/app.c": FIXED})
    path.write_text("Description: x\nApplies-To: >=1.0, <1.0.1\n---\n" + diff)
    parsed, problems = parse_patch_file(path)
    assert problems == [] and parsed is not None and str(parsed.applies_to) == "<1.0.1,>=1.0"
