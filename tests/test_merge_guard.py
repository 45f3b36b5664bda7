"""A 3-way merge never writes a change upstream already has (issue 17, item 2).

Written from scratch in the shape of what was measured on Debian series: a bounds check
upstream took a few lines away from where the patch puts it (xz-utils' index.c at 5.8.4),
a source and a test fix upstream took with other context (jq 1.8.2), and a merge that
changes nothing (util-linux 2.41.5). Each upstream is a real git repository: v1.0.0, where
the patch was written, and v1.1.0, the release the patch is judged against.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from patchkeeper.engine.merge_guard import judge_merge
from tests.helpers import (
    commit_files,
    diff_of,
    git,
    make_repo,
    outcomes,
    patch_text,
    run_json,
    write_patch_set,
)

HEAD = [
    "#include <stddef.h>",
    "",
    "int sum(int *buf, int n)",
    "{",
    "    int total = 0;",
    "    int i;",
    "    prepare(buf);",
    "    validate(buf);",
    "    for (i = 0; i < n; i++)",
    "        total += buf[i];",
    "    finish(buf);",
    "    return total;",
    "}",
]
CHECK = [
    "    if (n < 0 || n > MAX_ITEMS)",
    "        return -1;",
    "    if (buf == NULL)",
    "        return -2;",
]
TEST_BEFORE = ["def test_sum():", "    assert run([1, 2]) == 3", "", "def test_end():", "    pass"]
TEST_CASE = ["def test_negative():", "    assert run([], n=-1) == -1", ""]


def text(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def with_block(lines: list[str], after: str, block: list[str]) -> list[str]:
    at = lines.index(after) + 1
    return [*lines[:at], *block, *lines[at:]]


def judge(repo: Path, tmp_path: Path, fix: dict[str, str], release: dict[str, str]) -> dict:
    """The patch FIX (written on v1.0.0) checked against RELEASE (v1.1.0)."""
    diff = diff_of(repo, fix)
    (tmp_path / "fix.diff").write_text(diff)
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(diff)})
    commit_files(repo, release, "release 1.1.0", tag="v1.1.0")
    code, doc = run_json("check", "--install", repo, "--patches", patches, "--ref", "v1.1.0")
    result = doc["targets"][0]["patches"][0]
    return {"code": code, **result}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    files = {"src/index.c": text(HEAD), "tests/test_sum.py": text(TEST_BEFORE)}
    return make_repo(tmp_path / "up", files, tag="v1.0.0")


def test_a_fix_upstream_took_a_few_lines_away_is_upstream_has_it(
    repo: Path, tmp_path: Path
) -> None:
    """xz-utils' shape: the merge is clean, and would hold the bounds check twice."""
    fix = {"src/index.c": text(with_block(HEAD, "    int i;", CHECK))}
    release = {"src/index.c": text(with_block(HEAD, "    validate(buf);", CHECK))}
    result = judge(repo, tmp_path, fix, release)
    assert result["outcome"] == "upstream-has-it", result
    assert "a second time" in result["detail"] and result["code"] == 0
    # What git alone does at v1.1.0: a clean merge that holds the check twice.
    git(repo, "apply", "--3way", "--cached", str(tmp_path / "fix.diff"))
    assert git(repo, "show", ":src/index.c").count("if (n < 0 || n > MAX_ITEMS)") == 2


def test_the_fix_at_its_place_with_a_reworded_context_line_is_upstream_has_it(
    repo: Path, tmp_path: Path
) -> None:
    """Upstream's copy stands between the hunk's context lines, and upstream reworded the
    context line after it: still the hunk's place (the span is counted, not matched)."""
    fix = {"src/index.c": text(with_block(HEAD, "    int i;", CHECK))}
    took = with_block(HEAD, "    validate(buf);", CHECK)
    release = {"src/index.c": text([line.replace("i++", "++i") for line in took])}
    result = judge(repo, tmp_path, fix, release)
    assert result["outcome"] == "upstream-has-it", result


def test_a_source_and_a_test_fix_upstream_took_with_other_context(
    repo: Path, tmp_path: Path
) -> None:
    """jq's shape: two files, each fix upstream in its own place; both would be doubled."""
    fix = {
        "src/index.c": text(with_block(HEAD, "    int i;", CHECK)),
        "tests/test_sum.py": text(with_block(TEST_BEFORE, "", TEST_CASE)),
    }
    release = {
        "src/index.c": text(with_block(HEAD, "    validate(buf);", CHECK)),
        "tests/test_sum.py": text([*TEST_BEFORE, "", *TEST_CASE[:2]]),
    }
    result = judge(repo, tmp_path, fix, release)
    assert result["outcome"] == "upstream-has-it", result


def test_a_merge_that_changes_nothing_is_upstream_has_it(repo: Path, tmp_path: Path) -> None:
    """util-linux's shape: upstream made the same change and reworded a context line."""
    changed = [line.replace("validate(buf)", "validate(buf, n)") for line in HEAD]
    fix = {"src/index.c": text(changed)}
    release = {"src/index.c": text([*changed[:10], "    finish(buf, n);", *changed[11:]])}
    result = judge(repo, tmp_path, fix, release)
    assert result["outcome"] == "upstream-has-it", result
    assert "changes nothing" in result["detail"]


def test_half_of_it_upstream_is_a_conflict_and_nothing_is_written(
    repo: Path, tmp_path: Path
) -> None:
    fresh = ["    if (n > LIMIT)", "        warn_large(n);"]
    both = with_block(with_block(HEAD, "    int i;", CHECK), "    finish(buf);", fresh)
    fix = {"src/index.c": text(both)}
    release = {"src/index.c": text(with_block(HEAD, "    validate(buf);", CHECK))}
    result = judge(repo, tmp_path, fix, release)
    assert result["outcome"] == "conflict", result
    assert "unclear whether upstream has the fix" in result["detail"]
    assert result["code"] == 3


def test_a_real_merge_still_merges(repo: Path, tmp_path: Path) -> None:
    """Upstream rewords a context line near the fix and has no check of its own."""
    fix = {"src/index.c": text(with_block(HEAD, "    int i;", CHECK))}
    reworded = [line.replace("i++", "++i") for line in HEAD]
    release = {"src/index.c": text(reworded)}
    result = judge(repo, tmp_path, fix, release)
    assert result["outcome"] == "merged-3way", result


def test_a_moved_block_is_not_written_twice_by_counting() -> None:
    """A patch that moves a block: it stands as often after as before, nothing doubled."""
    before = text(["a();", *CHECK, "b();", "c();"]).encode()
    after = text(["a();", "b();", *CHECK, "c();"]).encode()
    removed, added = "".join(f"-{x}\n" for x in CHECK), "".join(f"+{x}\n" for x in CHECK)
    hunk = f"@@ -1,7 +1,7 @@\n a();\n{removed} b();\n{added} c();\n".encode()
    assert judge_merge([("f.c", [hunk])], {"f.c": before}, {"f.c": after}) is None


def test_apply_writes_nothing_twice(repo: Path, tmp_path: Path) -> None:
    """On the work tree: the install at the release, the fix there already in its own place."""
    fix = diff_of(repo, {"src/index.c": text(with_block(HEAD, "    int i;", CHECK))})
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(fix)})
    release = text(with_block(HEAD, "    validate(buf);", CHECK))
    commit_files(repo, {"src/index.c": release}, "release 1.1.0")
    code, doc = run_json("apply", "--install", repo, "--patches", patches)
    assert outcomes(doc) == {"fix": "upstream-has-it"}, doc
    assert code == 0
    assert (repo / "src/index.c").read_text().count("MAX_ITEMS") == 1


def test_in_a_batch_as_one_by_one(tmp_path: Path) -> None:
    """Several failed patches are merged together in one `--3way` run: the guard judges each
    the same as alone. Three files: upstream took the fix in two, one merges for real, and a
    plain diff (no index line, so no 3-way to try) conflicts."""
    from dataclasses import asdict

    from patchkeeper.engine.checking import check_refs
    from patchkeeper.patchset.load import load_patch_set

    names = ["a", "b", "c", "d"]
    repo = make_repo(tmp_path / "up", {f"src/{n}.c": text(HEAD) for n in names}, tag="v1.0.0")
    fixed = text(with_block(HEAD, "    int i;", CHECK))
    diffs = {n: diff_of(repo, {f"src/{n}.c": fixed}) for n in names}
    plain = "\n".join(line for line in diffs["d"].split("\n") if not line.startswith("index "))
    diffs["d"] = plain
    patches = write_patch_set(
        tmp_path / "ps", {f"{n}.patch": patch_text(d) for n, d in diffs.items()}
    )
    upstream = text(with_block(HEAD, "    validate(buf);", CHECK))
    reworded = text([line.replace("i++", "++i") for line in HEAD])
    release = {"src/a.c": upstream, "src/b.c": upstream, "src/c.c": reworded, "src/d.c": reworded}
    commit_files(repo, release, "release 1.1.0", tag="v1.1.0")
    patch_set = load_patch_set(patches)

    def results(batch: bool) -> list[dict]:
        (target,) = check_refs(repo, patch_set, ["v1.1.0"], reuse=False, batch=batch)
        return [{k: v for k, v in asdict(r).items() if k != "trees"} for r in target.results]

    batched = results(True)
    assert batched == results(False)
    assert [r["outcome"] for r in batched] == [
        "upstream-has-it", "upstream-has-it", "merged-3way", "conflict",
    ]  # fmt: skip


GUARDED = [
    "def a(x):",
    "    if x is None:",
    "        raise ValueError",
    "    return x + 1",
    "",
    "def b(x):",
    "    y = x * 2",
    "    z = y - 1",
    "    w = z + y",
    "    return w",
]
GUARD = ["    if x is None:", "        raise ValueError"]


def test_the_same_lines_elsewhere_in_the_file_are_not_upstream_having_it(
    tmp_path: Path,
) -> None:
    """a() has the guard; the patch adds it to b(); upstream rewords a line below the hunk.
    The merge writes the guard into b() for the first time: not `upstream-has-it`, though
    a()'s guard stands right before the hunk's first context line."""
    repo = make_repo(tmp_path / "up", {"m.py": text(GUARDED)})
    fix = diff_of(repo, {"m.py": text(with_block(GUARDED, "def b(x):", GUARD))})
    patches = write_patch_set(tmp_path / "ps", {"guard-b.patch": patch_text(fix)})
    release = [line.replace("z + y", "z + 2 * y") for line in GUARDED]
    commit_files(repo, {"m.py": text(release)}, "release 1.1.0")
    code, doc = run_json("apply", "--install", repo, "--patches", patches)
    (result,) = doc["patches"]
    assert result["outcome"] == "conflict", doc
    assert "unclear whether upstream has the fix" in result["detail"]
    assert code == 3
    assert (repo / "m.py").read_text() == text(release)  # nothing written


def test_a_lock_block_copied_from_elsewhere_is_a_conflict() -> None:
    """judge_merge alone: a 4-line lock block the file holds in one function, added to
    another far from it, is new there."""
    lock = ["    lock.acquire()", "    try:", "        work()", "    finally:"]
    head = ["def one():", *lock, "        lock.release()", "", "", "def two():"]
    tail = ["    prepare()", "    check()", "    work()", "    done()"]
    before = text([*head, *tail]).encode()
    after = text([*head, *lock, "        lock.release()", *tail]).encode()
    added = "".join(f"+{x}\n" for x in [*lock, "        lock.release()"])
    hunk = f"@@ -8,4 +8,9 @@\n \n def two():\n{added}     prepare()\n     check()\n".encode()
    refusal = judge_merge([("f.py", [hunk])], {"f.py": before}, {"f.py": after})
    assert refusal is not None and not refusal.has_it, refusal
    assert "unclear whether upstream has the fix" in refusal.detail
