"""A small, fixed-seed share of the patch fuzzer (tests/benchmarks/fuzz_patches.py, run by hand
with 10,000 cases): mutated patch files never give exit 1, a traceback, a multi-line error,
a hang, or a tree changed by a command that failed."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "benchmarks"))

import fuzz_patches


def test_mutated_patch_files_are_handled_one_line_at_a_time() -> None:
    tally = fuzz_patches.fuzz(cases=60, jobs=1, seed=9)
    assert tally.cases == 60 and tally.runs == 240
    assert tally.lint_accepted > 5  # the mutations leave enough patches for the engine to try
    summary = tally.summary()
    assert tally.failures() == 0, (
        summary,
        [(f["case"], f.get("command"), f.get("stderr")) for f in tally.exit_1[:3]],
        tally.multi_line[:2],
        tally.tree_changed[:2],
    )
