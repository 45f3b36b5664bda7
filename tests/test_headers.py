"""Headers as people write them (issue 17): DEP-3 in full, gbp pq and format-patch with or
without the mbox line, quilt's Index lines, header-less diffs, empty patches. A header
problem that leaves the diff readable is a warning naming file and line, never a refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchkeeper.patchset.load import load_patch_set
from patchkeeper.patchset.parse import parse_patch_file
from tests.helpers import diff_of, git, make_repo, run_cli, run_json, tree_snapshot

LINES = "".join(f"line {n}\n" for n in range(1, 21))
FIXED = LINES.replace("line 5\n", "line 5 fixed\n")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "up", {"src/app.c": LINES}, tag="v1.0.0")


def plain_diff(repo: Path) -> str:
    """The diff as `diff -u` (and quilt) writes it: no `diff --git`, no index line."""
    body = diff_of(repo, {"src/app.c": FIXED}).split("\n--- ", 1)[1]
    return "--- " + body.replace("--- a/", "--- app.orig/").replace("+++ b/", "+++ app/")


GBP_PQ = """From: Jane Maintainer <jane@example.org>
Date: Tue, 3 Mar 2026 10:00:00 +0100
Subject: [PATCH] Fix line five

The long story of the fix,
over two lines.

Bug-Debian: https://bugs.debian.org/1
Signed-off-by: Jane Maintainer <jane@example.org>
Signed-off-by: Joe Upstream <joe@example.org>
---
 src/app.c | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

"""

DEP3 = """Description: Fix line five
 Longer words about it.
 .
 And a second paragraph.
Author: Jane Maintainer <jane@example.org>
Author: Joe Upstream <joe@example.org>
Upstream-Author: Someone Else
Origin: upstream, https://example.org/commit/1
Bug: https://example.org/issues/1
Bug: https://example.org/issues/2
Bug-Debian: https://bugs.debian.org/1
Bug-Debian: https://bugs.debian.org/2
Bug-Ubuntu: https://launchpad.net/bugs/3
X-Ticket: OPS-1
MIME-Version: 1.0
Content-Type: text/plain; charset=UTF-8
Content-Transfer-Encoding: 8bit
Forwarded: not-needed
Last-Update: 2026-03-03
Applies-To: >=1.0
Backport of:
https://example.org/commit/1
=====================
Some words a person wrote.

"""


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def test_gbp_pq_header_without_the_mbox_line(repo: Path, tmp_path: Path) -> None:
    path = write(tmp_path, "fix.patch", GBP_PQ + diff_of(repo, {"src/app.c": FIXED}))
    parsed, problems = parse_patch_file(path)
    assert problems == [] and parsed is not None
    assert parsed.description == "Fix line five"  # the [PATCH] tag is gone
    assert parsed.header.values["signed-off-by"] == (
        "Jane Maintainer <jane@example.org>",
        "Joe Upstream <joe@example.org>",
    )
    assert parsed.header.fields["date"].startswith("Tue, 3 Mar 2026")
    assert "The long story of the fix," in parsed.header.free_text
    assert parsed.files == ("src/app.c",) and parsed.warnings == ()


def test_format_patch_with_the_mbox_line(repo: Path, tmp_path: Path) -> None:
    (repo / "src/app.c").write_text(FIXED)
    git(repo, "commit", "-qam", "Fix line five\n\nBug: https://example.org/1")
    out = tmp_path / "mail"
    git(repo, "format-patch", "-1", "-o", str(out))
    parsed, problems = parse_patch_file(next(out.iterdir()))
    assert problems == [] and parsed is not None
    assert parsed.description == "Fix line five" and parsed.header.fields["bug"]


def test_dep3_in_full_repeatable_unknown_and_free_text(repo: Path, tmp_path: Path) -> None:
    path = write(tmp_path, "fix.patch", DEP3 + "---\n" + diff_of(repo, {"src/app.c": FIXED}))
    parsed, problems = parse_patch_file(path)
    assert problems == [] and parsed is not None
    header = parsed.header
    assert parsed.description.startswith("Fix line five\nLonger words about it.")
    assert header.values["author"] == (
        "Jane Maintainer <jane@example.org>",
        "Joe Upstream <joe@example.org>",
    )
    assert header.values["bug"] == ("https://example.org/issues/1", "https://example.org/issues/2")
    assert len(header.values["bug-debian"]) == 2
    assert set(header.unknown) == {"Upstream-Author", "X-Ticket"}
    assert str(parsed.applies_to) == ">=1.0"
    assert header.free_text[:3] == ("Backport of:", "https://example.org/commit/1", "=" * 21)
    assert parsed.warnings == ()  # all of it is DEP-3 as written


def test_quilt_index_lines_and_a_plain_diff(repo: Path, tmp_path: Path) -> None:
    text = "Description: Fix line five\n\nIndex: app/src/app.c\n" + "=" * 67 + "\n"
    path = write(tmp_path, "fix.patch", text + plain_diff(repo))
    parsed, problems = parse_patch_file(path)
    assert problems == [] and parsed is not None
    assert parsed.files == ("src/app.c",) and "index" not in parsed.header.fields


def test_a_header_less_diff_is_accepted_without_a_warning(repo: Path, tmp_path: Path) -> None:
    parsed, problems = parse_patch_file(write(tmp_path, "fix.diff", plain_diff(repo)))
    assert problems == [] and parsed is not None
    assert parsed.files == ("src/app.c",) and parsed.warnings == ()


def test_a_repeated_single_field_is_a_warning_with_file_and_line(
    repo: Path, tmp_path: Path
) -> None:
    text = "Description: one\nOrigin: a\nOrigin: b\n---\n" + diff_of(repo, {"src/app.c": FIXED})
    parsed, problems = parse_patch_file(write(tmp_path, "fix.patch", text))
    assert problems == [] and parsed is not None
    assert [(w.line, w.message.split(";")[0]) for w in parsed.warnings] == [
        (3, "header 'Origin' repeats the one on line 2")
    ]
    assert parsed.header.values["origin"] == ("a", "b") and parsed.header.fields["origin"] == "a"


def test_no_description_is_a_warning(repo: Path, tmp_path: Path) -> None:
    text = "Origin: vendor\n---\n" + diff_of(repo, {"src/app.c": FIXED})
    parsed, problems = parse_patch_file(write(tmp_path, "fix.patch", text))
    assert problems == [] and parsed is not None
    assert [str(w) for w in parsed.warnings] == [
        f"{tmp_path / 'fix.patch'}:1: the header has no Description (or Subject)"
    ]


@pytest.mark.parametrize("text", ["", "Description: nothing yet\n"], ids=["zero bytes", "header"])
def test_an_empty_patch_is_empty(text: str, tmp_path: Path) -> None:
    parsed, problems = parse_patch_file(write(tmp_path, "empty.patch", text))
    assert problems == [] and parsed is not None
    assert parsed.empty and parsed.diff == b"" and parsed.files == ()


def test_broken_diff_lines_are_not_an_empty_patch(tmp_path: Path) -> None:
    text = "Description: x\n--- a/src/app.c\n+++ b/src/app.c\n"  # no hunk
    parsed, problems = parse_patch_file(write(tmp_path, "fix.patch", text))
    assert parsed is None and "no diff found" in problems[0].message


def test_our_own_fields_stay_strict(repo: Path, tmp_path: Path) -> None:
    diff = diff_of(repo, {"src/app.c": FIXED})
    text = "Description: x\nSmoke: a\nSmoke: b\nApplies-To: >=banana\n---\n" + diff
    parsed, problems = parse_patch_file(write(tmp_path, "fix.patch", text))
    assert parsed is None
    assert [(p.line, p.message) for p in problems] == [
        (3, "duplicate header 'Smoke'"),
        (4, "invalid PEP 440 specifier set '>=banana'"),
    ]


def debian_like_set(repo: Path, root: Path) -> Path:
    """A series as Debian ships it: gbp pq, DEP-3 with X- fields, quilt, header-less, empty."""
    other = LINES.replace("line 15\n", "line 15 fixed\n")
    files = {
        "0001-gbp.patch": GBP_PQ + diff_of(repo, {"src/app.c": FIXED}),
        "dep3.patch": DEP3.replace("Applies-To: >=1.0\n", "")
        + "---\n"
        + diff_of(repo, {"src/other.c": other}),
        "quilt.diff": "Description: quilt\n\nIndex: app/README\n====\n"
        + "--- /dev/null\n+++ app/README\n@@ -0,0 +1 @@\n+read me\n",
        "empty.patch": "",
        "dup.patch": "Description: dup\nOrigin: a\nOrigin: b\n---\n"
        + diff_of(repo, {"src/new.c": "new\n"}),
    }
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    (root / "series").write_text("\n".join(files) + "\n")
    return root


def test_a_debian_style_series_lints_checks_and_applies(repo: Path, tmp_path: Path) -> None:
    patches = debian_like_set(repo, tmp_path / "debian")
    lint = run_cli("lint", "--patches", patches)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert f"{patches / 'dup.patch'}:3: warning: header 'Origin' repeats" in lint.stdout
    assert f"{patches / 'empty.patch'}:1: warning: no diff: an empty patch" in lint.stdout
    assert "5 patch(es), 0 problem(s), 2 warning(s)" in lint.stdout
    _, shown = run_json("lint", "--patches", patches)
    dep3 = shown["headers"]["dep3.patch"]
    assert dep3["fields"]["Bug"] == ["https://example.org/issues/1", "https://example.org/issues/2"]
    assert dep3["fields"]["X-Ticket"] == "OPS-1" and "X-Ticket" in dep3["unknown"]
    assert shown["headers"]["empty.patch"]["empty"] is True
    code, applied = run_json("apply", "--install", repo, "--patches", patches)
    outcomes = {p["name"]: p["outcome"] for p in applied["patches"]}
    assert outcomes == {
        "0001-gbp": "applied",
        "dep3": "applied",
        "quilt": "applied",
        "empty": "already-applied",
        "dup": "applied",
    }, applied
    empty = next(p for p in applied["patches"] if p["name"] == "empty")
    assert "empty patch" in empty["detail"]
    assert (repo / "README").read_text() == "read me\n"
    # Written, and none names a smoke check or says `Smoke: none (WHY)`: not proven (issue 26
    # item 7), each fix named once (the empty patch has nothing in the tree to prove).
    unchecked = ["0001-gbp", "dep3", "quilt", "dup"]
    assert code == 5
    assert [n.split(" ")[0] for n in applied["notes"] if "no smoke check" in n] == unchecked
    snapshot = tree_snapshot(repo)
    code, status = run_json("status", "--install", repo, "--patches", patches)
    assert code == 5 and tree_snapshot(repo) == snapshot
    assert [n.split(" ")[0] for n in status["notes"] if "no smoke check" in n] == unchecked
    assert load_patch_set(patches).by_name("empty") is not None
