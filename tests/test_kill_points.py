"""SIGKILL at the Nth unlink, rename or truncate of `update` and `apply` and of every process
they start (strace fault injection), then `recover`: nothing lost, nothing torn, no false 0.

The sweep itself is tests/benchmarks/kill_sweep.py (its docstring says what is checked); it
runs every N by hand. Here each group of syscalls (all seven, unlink, rename, truncate) is
sampled at every STRIDE-th N, each group from its own offset so the samples of the groups
fall on different Ns, from 1 to the most calls of one syscall in one process of a clean run.
`PATCHKEEPER_KILL_SWEEP=all` runs every N.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.benchmarks.kill_sweep import GROUPS, summary, sweep

STRIDE = 6

pytestmark = [
    pytest.mark.sweep,
    pytest.mark.skipif(
        shutil.which("strace") is None,
        reason="strace is not installed (.ci/run installs it; locally: apt-get install strace)",
    ),
]


def sampled(most: dict[str, int]) -> dict[str, range]:
    if os.environ.get("PATCHKEEPER_KILL_SWEEP") == "all":
        return {group: range(1, n + 1) for group, n in most.items()}
    return {
        group: range(1 + offset % STRIDE, n + 1, STRIDE)
        for offset, (group, n) in enumerate(most.items())
    }


@pytest.mark.parametrize("command", ["update", "apply"])
def test_a_kill_at_any_write_loses_nothing_and_recover_tells_the_truth(
    command: str, tmp_path: Path
) -> None:
    most, verdicts = sweep(command, tmp_path, sampled)
    assert set(most) == set(GROUPS) and most["all"] >= 5, most  # the run does write
    assert sum(v.killed for _, v in verdicts) >= len(verdicts) // 2, summary(
        command, most, verdicts
    )
    failures = {
        f"{group} N={n}": [*v.lost, *v.torn, *v.wrong_exit]
        for (group, n), v in verdicts
        if not v.recovered
    }
    assert not failures, (summary(command, most, verdicts), failures)
