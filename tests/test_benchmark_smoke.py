"""The CI-scale benchmark (tests/benchmarks/bench_ci.py) is run by hand; here it runs once with
tiny parameters, so the script itself cannot rot: it builds its upstream, runs every row and
prints the table it promises."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.benchmarks.synthetic import build

SCRIPT = Path(__file__).resolve().parent / "benchmarks" / "bench_ci.py"


def test_the_synthetic_upstream_meets_every_outcome(tmp_path: Path) -> None:
    from patchkeeper.engine.checking import check_refs
    from patchkeeper.patchset.load import load_patch_set

    upstream = build(tmp_path / "up", files=300, tags=6, changes=20, patches=40, sizes=(10, 40))
    assert upstream.tags == [f"v1.{n}.0" for n in range(6)]
    assert (upstream.install / "pkg000" / "mod00000.py").is_file()
    reports = check_refs(upstream.install, load_patch_set(upstream.patch_sets[10]), upstream.tags)
    seen = {result.outcome for report in reports for result in report.results}
    assert {"applied", "applied-offset", "merged-3way", "upstream-has-it", "conflict"} <= seen
    floor = upstream.floor_lists[40].read_text().splitlines()
    assert len(floor) == 40 and all(line.endswith(".py") for line in floor)


def test_the_benchmark_runs_and_prints_its_table(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--files", "200", "--tags", "3", "--changes", "10",
         "--sizes", "10", "--tag-counts", "1,3", "--runs", "1", "--root", str(tmp_path / "b")],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert out.startswith("synthetic upstream: 200 files, 3 tags")
    for row in ("check 10 x 1 ", "check 10 x 3 ", "worktree add + apply --check",
                "update, ", "patchkeeper --version", "patchkeeper --help"):  # fmt: skip
        assert row in out, (row, out)
    assert "per-patch plumbing floor (bash)" in out and "ms per patch per tag" in out


EDGES = Path(__file__).resolve().parent / "benchmarks" / "bench_edges.py"


def test_the_edge_benchmark_runs_and_prints_every_row(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(EDGES), "--files", "200", "--tags", "3", "--changes", "10",
         "--patches", "5", "--variants", "3", "--same-tags", "3", "--runs", "1",
         "--root", str(tmp_path / "e")],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert out.startswith("synthetic upstream: 200 files, 3 tags")
    rows = (
        "variants: check 5 x 3v x 1 ", "variants: lint 5 x 3v ", "no-change tags: check 5 x 3 ",
        "many patches: check 20 x 3 ", "small: check 10 x 1 ", "small: patchkeeper --version",
        "json: peak of check 5 x 3 ", "update, ",
    )  # fmt: skip
    for row in rows:
        assert row in out, (row, out)
    ratios = re.findall(r"\b(\d+\.\d\d)x\b", out)
    assert len(ratios) == 13 and all(float(ratio) > 0 for ratio in ratios), out
