"""Diffs as the rest of the world writes them (issue 27, D2-D8): read as `git apply` reads
them, each case checked against real `git apply --check` and GNU `patch --dry-run -p1` first.

Where the two disagree it is said in the case (and docs/patch-set-format.md): patchkeeper
follows git, and reads what only GNU patch reads the way GNU patch does.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import make_repo, outcomes, run_cli, run_json, tree_snapshot, write_patch_set

FILE = "one\ntwo\nthree\n\nfour\n"
FIXED = FILE.replace("two", "TWO")
HUNK = "@@ -1,5 +1,5 @@\n one\n-two\n+TWO\n three\n \n four\n"
STAMP = "2024-03-01 12:00:00.000000000 +0000"
NEW_HUNK = "@@ -0,0 +1,2 @@\n+hello\n+world\n"

# name: (the diff, what git apply reads, what GNU patch -p1 reads, the files after apply)
CASES: dict[str, tuple[bytes, bool, bool, dict[str, bytes]]] = {
    "gendiff: the new name suffixed (D2b)": (
        f"--- pkg-1.0/src/f.c\t{STAMP}\n+++ pkg-1.0/src/f.c.new\t{STAMP}\n{HUNK}".encode(),
        True,
        True,
        {"src/f.c": FIXED.encode()},
    ),
    "no folder, the new name suffixed: git guesses -p0 (D2b)": (
        f"--- f.c\n+++ f.c.new\n{HUNK}".encode(),
        True,
        False,  # GNU patch -p1 cannot find the file
        {"f.c": FIXED.encode(), "src/f.c": FILE.encode()},
    ),
    "one name with no folder, the other with one": (
        f"--- f.c\n+++ b/f.c\n{HUNK}".encode(),
        True,
        True,
        {"f.c": FIXED.encode(), "src/f.c": FILE.encode()},
    ),
    "the old name suffixed (D2)": (
        f"--- keyutils-1.6/src/f.c.orig\t{STAMP}\n"
        f"+++ keyutils-1.6/src/f.c\t{STAMP}\n{HUNK}".encode(),
        True,
        True,
        {"src/f.c": FIXED.encode()},
    ),
    "git's mnemonic prefixes i/ w/ (D3)": (
        f"diff --git i/src/f.c w/src/f.c\n--- i/src/f.c\n+++ w/src/f.c\n{HUNK}".encode(),
        True,
        True,
        {"src/f.c": FIXED.encode()},
    ),
    "git's mnemonic prefixes c/ o/ (D3)": (
        f"diff --git c/src/f.c o/src/f.c\n--- c/src/f.c\n+++ o/src/f.c\n{HUNK}".encode(),
        True,
        True,
        {"src/f.c": FIXED.encode()},
    ),
    "a --src-prefix / --dst-prefix pair (D3)": (
        f"diff --git upstream/src/f.c mine/src/f.c\n--- upstream/src/f.c\n+++ mine/src/f.c\n"
        f"{HUNK}".encode(),
        True,
        True,
        {"src/f.c": FIXED.encode()},
    ),
    "spaces, not a tab, before the timestamp (D4)": (
        f"--- a/src/f.c    {STAMP}\n+++ b/src/f.c    {STAMP}\n{HUNK}".encode(),
        True,
        True,
        {"src/f.c": FIXED.encode()},
    ),
    "spaces before a ctime timestamp (D4): GNU patch reads it, git takes it for the name": (
        f"--- a/src/f.c  Fri Mar  1 12:00:00 2024\n+++ b/src/f.c  Fri Mar  1 12:00:00 2024\n"
        f"{HUNK}".encode(),
        False,
        True,
        {"src/f.c": FIXED.encode()},
    ),
    "a diff --git line naming other paths than ---/+++ (D5)": (
        f"diff --git a/src/other.c b/src/other.c\n--- a/src/f.c\n+++ b/src/f.c\n{HUNK}".encode(),
        True,
        True,
        {"src/f.c": FIXED.encode()},
    ),
    "the last line a blank context line with its space eaten (D6)": (
        b"--- a/src/f.c\n+++ b/src/f.c\n@@ -1,4 +1,4 @@\n one\n-two\n+TWO\n three\n\n",
        True,
        True,
        {"src/f.c": FIXED.encode()},
    ),
    "a creation written with an epoch timestamp (D7)": (
        f"--- pkg.orig/src/new.c\t1970-01-01 00:00:00.000000000 +0000\n"
        f"+++ pkg/src/new.c\t{STAMP}\n{NEW_HUNK}".encode(),
        True,
        True,
        {"src/f.c": FILE.encode(), "src/new.c": b"hello\nworld\n"},
    ),
    "a doubled slash (D8): GNU patch reads src/f.c, git an absolute /src/f.c": (
        f"--- foo-orig//src/f.c\n+++ foo//src/f.c\n{HUNK}".encode(),
        False,
        True,
        {"src/f.c": FIXED.encode()},
    ),
    "a byte that is not UTF-8 (Debian libzstd 0020)": (
        f"--- a/src/f.c\n+++ b/src/f.c\n{HUNK}".encode().replace(b"+TWO", b"+TW\xd6"),
        True,
        True,
        {"src/f.c": FIXED.encode().replace(b"TWO", b"TW\xd6")},
    ),
}


def _base(root: Path) -> Path:
    return make_repo(root, {"src/f.c": FILE, "f.c": FILE}, tag="v1.0.0")


def _checked(doc: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["outcome"] for p in doc["targets"][0]["patches"]}


def _git_reads(repo: Path, diff: bytes) -> bool:
    proc = subprocess.run(["git", "apply", "--check"], cwd=repo, input=diff, capture_output=True)
    return proc.returncode == 0


def _gnu_patch_reads(repo: Path, diff: bytes) -> bool:
    proc = subprocess.run(
        ["patch", "--dry-run", "-p1", "--fuzz=0", "--batch"],
        cwd=repo,
        input=diff,
        capture_output=True,
    )
    return proc.returncode == 0


@pytest.mark.skipif(shutil.which("patch") is None, reason="GNU patch is not installed")
@pytest.mark.parametrize("case", sorted(CASES))
def test_read_as_git_and_gnu_patch_read_it(case: str, tmp_path: Path) -> None:
    diff, git_reads, gnu_reads, after = CASES[case]
    repo = _base(tmp_path / "up")
    assert (_git_reads(repo, diff), _gnu_patch_reads(repo, diff)) == (git_reads, gnu_reads)
    patches = write_patch_set(tmp_path / "ps", {})
    (patches / "fix.patch").write_bytes(b"Description: a fix from elsewhere\n---\n" + diff)
    (patches / "series").write_text("fix.patch\n")
    lint = run_cli("lint", "--patches", patches)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    code, doc = run_json("check", "--install", repo, "--patches", patches, "--ref", "v1.0.0")
    assert (code, _checked(doc)) == (0, {"fix": "applied"})
    code, doc = run_json("apply", "--install", repo, "--patches", patches, "--no-smoke")
    assert outcomes(doc) == {"fix": "applied"}
    files = {path: data for path, data in tree_snapshot(repo).items() if path.endswith(".c")}
    assert files == {"f.c": FILE.encode(), **after}  # nothing renamed, deleted or made anew


def test_a_patch_file_series_leaves_out_is_a_warning(tmp_path: Path) -> None:
    """Debian's libpng ships one: the set is read, the file named as a warning."""
    repo = _base(tmp_path / "up")
    diff = f"--- a/src/f.c\n+++ b/src/f.c\n{HUNK}"
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": f"Description: x\n---\n{diff}"})
    (patches / "left-out.patch").write_text(f"Description: y\n---\n{diff}")
    code, doc = run_json("lint", "--patches", patches)
    assert code == 0
    assert [w["message"] for w in doc["warnings"]] == ["patch file is not listed in series"]
    code, doc = run_json("check", "--install", repo, "--patches", patches, "--ref", "v1.0.0")
    assert (code, _checked(doc)) == (0, {"fix": "applied"})


def test_lint_json_never_lists_ok_a_patch_git_cannot_read(tmp_path: Path) -> None:
    """A header git cannot read (it aborts on `lew file mode`): invalid in the list too."""
    patches = write_patch_set(tmp_path / "ps", {})
    (patches / "bad.patch").write_text(
        "Description: x\n---\ndiff --git a/new.c b/new.c\nlew file mode 100644\n"
        "--- /dev/null\n+++ b/new.c\n@@ -0,0 +1 @@\n+hello\n"
    )
    (patches / "series").write_text("bad.patch\n")
    code, doc = run_json("lint", "--patches", patches)
    assert code == 2
    assert "git cannot read the diff" in doc["problems"][0]["message"]
    assert doc["patches"] == [{"name": "bad", "outcome": "invalid"}]


@pytest.mark.skipif(shutil.which("patch") is None, reason="GNU patch is not installed")
def test_unrelated_names_follow_git_not_gnu_patch(tmp_path: Path) -> None:
    """`--- a/src/f.c` / `+++ b/src/g.c`: GNU patch edits the file that exists (f.c), git the
    new name (g.c, which does not exist): the two disagree, and patchkeeper follows git."""
    repo = _base(tmp_path / "up")
    diff = f"--- a/src/f.c\n+++ b/src/g.c\n{HUNK}".encode()
    assert (_git_reads(repo, diff), _gnu_patch_reads(repo, diff)) == (False, True)
    patches = write_patch_set(tmp_path / "ps", {})
    (patches / "fix.patch").write_bytes(b"Description: x\n---\n" + diff)
    (patches / "series").write_text("fix.patch\n")
    code, doc = run_json("check", "--install", repo, "--patches", patches, "--ref", "v1.0.0")
    [patch] = doc["targets"][0]["patches"]
    assert (code, patch["outcome"]) == (3, "conflict")
    assert "src/g.c" in patch["detail"]


def test_an_impossible_timestamp_is_no_epoch_and_no_traceback(tmp_path: Path) -> None:
    """`--- a/src/f.c<TAB>2024-13-45 25:61:00`: a date no calendar has is not the epoch (git
    reads the names and ignores it); it was a ValueError traceback (exit 1) in lint."""
    repo = _base(tmp_path / "up")
    bad = "2024-13-45 25:61:00 +0000"
    diff = f"--- a/src/f.c\t{bad}\n+++ b/src/f.c\t{bad}\n{HUNK}"
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": f"Description: x\n---\n{diff}"})
    lint = run_cli("lint", "--patches", patches)
    assert lint.returncode == 0 and "Traceback" not in lint.stderr, lint.stdout + lint.stderr
    code, doc = run_json("check", "--install", repo, "--patches", patches, "--ref", "v1.0.0")
    assert (code, _checked(doc)) == (0, {"fix": "applied"})


def test_a_ctime_stamp_with_no_month_is_no_epoch_and_no_traceback(tmp_path: Path) -> None:
    """`Thu Foo  1 00:00:00 1970` has the ctime shape but no month: not the epoch. It was a
    ValueError ('Foo' is not in list), exit 1, in lint."""
    bad = "Thu Foo  1 00:00:00 1970"
    diff = f"--- a/src/f.c\t{bad}\n+++ b/src/f.c\t{bad}\n{HUNK}"
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": f"Description: x\n---\n{diff}"})
    lint = run_cli("lint", "--patches", patches)
    assert lint.returncode == 0 and "Traceback" not in lint.stderr, lint.stdout + lint.stderr
