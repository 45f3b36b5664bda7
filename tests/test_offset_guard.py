"""An apply at an offset that would write a fix upstream already has (issue 27, D1).

Upstream took the block at the patch's own place, and the patch's context stands again just
after upstream's copy: the forward apply still succeeds there, at an offset, and would write
the block a second time. Its reverse applies at the patch's own place: upstream has it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers import (
    commit_files,
    diff_of,
    make_repo,
    outcomes,
    patch_text,
    run_json,
    tree_snapshot,
    write_patch_set,
)

SECTION = (
    "\tlen = read_header(buf);\n\tskip_blanks(buf);\n\tlen -= trailer(buf);\n"
    "\tparse_body(buf, len);\n\tfinish(buf);\n\tbuf += len;\n"
)
BASE = "int handle(char *buf)\n{\n\tint len;\n" + SECTION + "\tlog_it();\n" + SECTION + "}\n"
CHECK = "\tif (len > MAX_BODY_LENGTH)\n\t\treturn reject_body(buf, len);\n"
FIXED = BASE.replace(SECTION, SECTION.replace("\tparse", CHECK + "\tparse"), 1)
# Upstream's copy at the patch's place, one more section of the same shape after it.
UPSTREAM = FIXED.replace("\tlog_it();\n", "\tlog_it();\n" + SECTION)


def _repo_and_patch(tmp_path: Path) -> tuple[Path, Path]:
    repo = make_repo(tmp_path / "up", {"body.c": BASE}, tag="v1")
    patches = write_patch_set(
        tmp_path / "ps", {"cve.patch": patch_text(diff_of(repo, {"body.c": FIXED}))}
    )
    commit_files(repo, {"body.c": UPSTREAM}, "take the length check", tag="v2")
    return repo, patches


def test_forward_at_an_offset_and_reverse_in_place_is_upstream_has_it(tmp_path: Path) -> None:
    repo, patches = _repo_and_patch(tmp_path)
    diff = (patches / "cve.patch").read_bytes()
    # The shape of D1, as git itself sees it: forward at an offset, reverse in place.
    forward = subprocess.run(
        ["git", "apply", "--check", "-v"], cwd=repo, input=diff, capture_output=True
    )
    assert b"(offset 9 lines)" in forward.stderr
    reverse = subprocess.run(
        ["git", "apply", "--check", "-v", "-R"], cwd=repo, input=diff, capture_output=True
    )
    assert reverse.returncode == 0 and b"offset" not in reverse.stderr
    code, doc = run_json("check", "--install", repo, "--patches", patches, "--ref", "v2")
    assert code == 0
    [patch] = doc["targets"][0]["patches"]
    assert patch["outcome"] == "upstream-has-it"
    assert "own place" in patch["detail"]
    assert patch["offsets"] == []


def test_apply_writes_nothing_a_second_time(tmp_path: Path) -> None:
    repo, patches = _repo_and_patch(tmp_path)
    before = tree_snapshot(repo)
    code, doc = run_json("apply", "--install", repo, "--patches", patches)
    assert (code, outcomes(doc)) == (0, {"cve": "upstream-has-it"})
    assert tree_snapshot(repo) == before
    assert (repo / "body.c").read_text().count("MAX_BODY_LENGTH") == 1


def test_a_batch_guards_the_moved_patch_too(tmp_path: Path) -> None:
    """Batched with a patch that applies cleanly, the moved one is still judged alone."""
    repo = make_repo(tmp_path / "up", {"body.c": BASE, "other.c": "one\ntwo\nthree\n"}, tag="v1")
    other = diff_of(repo, {"other.c": "one\ntwo and a half\nthree\n"})
    patches = write_patch_set(
        tmp_path / "ps",
        {
            "other.patch": patch_text(other),
            "cve.patch": patch_text(diff_of(repo, {"body.c": FIXED})),
        },
    )
    commit_files(repo, {"body.c": UPSTREAM}, "take the length check", tag="v2")
    code, doc = run_json("apply", "--install", repo, "--patches", patches)
    assert (code, outcomes(doc)) == (0, {"other": "applied", "cve": "upstream-has-it"})
    assert (repo / "body.c").read_text() == UPSTREAM


def test_upstreams_copy_with_a_reworded_context_line_is_upstream_has_it(tmp_path: Path) -> None:
    """The reverse fails (upstream reworded a context line at its copy), yet the block the
    patch adds stands between its own place and the offset git found: never written again."""
    repo, patches = _repo_and_patch(tmp_path)
    reworded = UPSTREAM.replace("skip_blanks", "skip_blank_lines", 1)
    commit_files(repo, {"body.c": reworded}, "rename a helper", tag="v3")
    code, doc = run_json("check", "--install", repo, "--patches", patches, "--ref", "v3")
    [patch] = doc["targets"][0]["patches"]
    assert (code, patch["outcome"]) == (0, "upstream-has-it")
    assert "between the patch's own place" in patch["detail"]


def test_a_plain_move_still_applies_at_its_offset(tmp_path: Path) -> None:
    """Lines added above the patch's place, no copy of its block: applied-offset as before."""
    repo, patches = _repo_and_patch(tmp_path)
    moved = BASE.replace("{\n", "{\n\tint a;\n\tint b;\n", 1)
    commit_files(repo, {"body.c": moved}, "two more locals", tag="v4")
    code, doc = run_json("check", "--install", repo, "--patches", patches, "--ref", "v4")
    [patch] = doc["targets"][0]["patches"]
    assert (code, patch["outcome"]) == (0, "applied-offset")
    assert [o["offset"] for o in patch["offsets"]] == [2]
