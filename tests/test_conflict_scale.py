"""Reporting a conflict stays linear (issue 9, item 10): the git processes a check starts do
not grow with the number of conflicting hunks, and each failing hunk is still named with the
lines that differ."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import (
    commit_files,
    diff_of,
    make_repo,
    patch_text,
    traced_check,
    write_patch_set,
)


def world(tmp_path: Path, hunks: int) -> tuple[Path, Path]:
    lines = [f"line {n}" for n in range(hunks * 10)]
    repo = make_repo(tmp_path / "repo", {"f.txt": "\n".join(lines) + "\n"})
    patched = [f"{line} patched" if n % 10 == 5 else line for n, line in enumerate(lines)]
    diff = diff_of(repo, {"f.txt": "\n".join(patched) + "\n"})
    upstream = [f"{line} upstream" if n % 10 == 4 else line for n, line in enumerate(lines)]
    commit_files(repo, {"f.txt": "\n".join(upstream) + "\n"}, "upstream moves every hunk")
    return repo, write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(diff)})


def check(repo: Path, patches: Path, trace: Path) -> tuple[dict, int]:
    proc, started = traced_check(repo, patches, trace)
    assert proc.returncode == 3, proc.stderr
    return json.loads(proc.stdout), len(started)


def test_git_processes_do_not_grow_with_conflicting_hunks(tmp_path: Path) -> None:
    counts = {}
    for hunks in (20, 200):
        repo, patches = world(tmp_path / str(hunks), hunks)
        document, counts[hunks] = check(repo, patches, tmp_path / f"trace-{hunks}")
        [fix] = document["targets"][0]["patches"]
        assert fix["outcome"] == "conflict"
        assert len(fix["conflicts"]) == hunks, "every failing hunk is named"
        first = fix["conflicts"][0]
        assert [m["found"] for m in first["mismatches"]] == ["line 4 upstream"]
    assert counts[200] == counts[20], counts


def test_a_form_feed_in_a_conflicting_line_stays_one_line(tmp_path: Path) -> None:
    lines = ["a", "b\fpage", "c", "d", "e"]
    repo = make_repo(tmp_path / "repo", {"f.txt": "\n".join(lines) + "\n"})
    patched = "\n".join(["a", "b\fpage", "c fixed", "d", "e"]) + "\n"
    patches = write_patch_set(
        tmp_path / "ps", {"fix.patch": patch_text(diff_of(repo, {"f.txt": patched}))}
    )
    commit_files(repo, {"f.txt": "\n".join(["a", "b\fpage", "c upstream", "d", "e"]) + "\n"}, "up")
    document, _ = check(repo, patches, tmp_path / "trace")
    [conflict] = document["targets"][0]["patches"][0]["conflicts"]
    assert "b\fpage" in conflict["expected"]
    assert [m["found"] for m in conflict["mismatches"]] == ["c upstream"]


def test_a_failed_patch_asks_for_its_preimage_and_its_content_in_one_process(
    tmp_path: Path,
) -> None:
    """Whether the 3-way merge has its preimage blob at hand, and the target's content it would
    merge with (and name the conflict from), come from one `cat-file --batch`."""
    repo, patches = world(tmp_path, 3)
    trace = tmp_path / "trace"
    document, _ = check(repo, patches, trace)
    assert document["targets"][0]["patches"][0]["outcome"] == "conflict"
    started = [line.split("trace: built-in: git ", 1)[1] for line in trace.read_text().splitlines()
               if "trace: built-in:" in line]  # fmt: skip
    judging = started[next(i for i, c in enumerate(started) if c.startswith("apply")) :]
    assert [c for c in judging if c.startswith("cat-file")] == ["cat-file --batch"], judging


def series_world(tmp_path: Path, count: int) -> tuple[Path, Path]:
    """COUNT quilt-style patches (no index line: no 3-way merge to try), each changing its own
    line of one shared file and a file of its own; upstream rewords every changed line, so
    every patch conflicts on the shared file and applies on its own one."""
    shared = [f"shared line {n}" for n in range(count * 10)]
    own = {f"own{n}.txt": f"own {n} a\nown {n} b\nown {n} c\n" for n in range(count)}
    repo = make_repo(tmp_path / "repo", {"shared.txt": "\n".join(shared) + "\n", **own})
    patches = {}
    for n in range(count):
        edited = [f"{line} fixed" if i == n * 10 + 5 else line for i, line in enumerate(shared)]
        diff = diff_of(
            repo,
            {"shared.txt": "\n".join(edited) + "\n", f"own{n}.txt": own[f"own{n}.txt"] + "more\n"},
        )
        plain = "".join(line for line in diff.splitlines(True) if not line.startswith("index "))
        patches[f"p{n:02d}.patch"] = patch_text(plain)
    reworded = [f"{line} upstream" if i % 10 == 5 else line for i, line in enumerate(shared)]
    commit_files(repo, {"shared.txt": "\n".join(reworded) + "\n"}, "upstream rewords")
    return repo, write_patch_set(tmp_path / "ps", patches)


def test_git_processes_do_not_grow_with_conflicts_on_one_ref(tmp_path: Path) -> None:
    """Issue 30: N conflicts on one ref are diagnosed in batches (one stream, one read, no
    reverse or fuzz check the files rule out), so the count is the same for 4 and for 16."""
    counts = {}
    for count in (4, 16):
        repo, patches = series_world(tmp_path / str(count), count)
        document, counts[count] = check(repo, patches, tmp_path / f"trace-{count}")
        results = document["targets"][0]["patches"]
        assert [r["outcome"] for r in results] == ["conflict"] * count
        assert all(r["detail"] == "does not apply to shared.txt" for r in results)
        assert all(len(r["conflicts"]) == 1 for r in results)
    assert counts[16] == counts[4], counts


def test_a_hunk_is_placed_from_the_positions_of_its_own_lines_only() -> None:
    """Placing the hunks of a big file indexes only the lines they look up (conflicts.py):
    every other line of the file is passed over, and the place found is the same."""
    from patchkeeper.engine.conflicts import best_start_of, line_positions

    target = [f"line {n % 97}" for n in range(5_000)] + ["only here", "and here"]
    expected = ["line 95", "line 96", "only here", "and here"]
    positions = line_positions(target, set(expected))
    assert set(positions) == set(expected)
    assert positions["only here"] == [5_000]
    assert len(positions["line 95"]) == len(range(95, 5_000, 97))
    assert best_start_of(target, expected, 0, positions) == 4_998
    assert best_start_of(target, expected, 0) == 4_998
