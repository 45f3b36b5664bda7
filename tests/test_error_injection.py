"""The machine refuses a write or a rename (ENOSPC, EDQUOT, EIO, EROFS, EACCES, EPERM) at the
Nth call of `update` and `apply` and of every process they start (strace fault injection):
exit 7 with one line naming the path, or the run's own exit when it could do without the
call; never 1, no traceback, no temporary file left, nothing lost or torn after `recover`.

The sweep is tests/benchmarks/error_sweep.py (its docstring says what is checked). Here each
group of calls (writes, renames) is sampled at PER_GROUP Ns spread over a clean run's most
calls, the six errnos taken in turn, so every errno meets every kind of call:
2 commands x 2 groups x 6 = 24 runs. `PATCHKEEPER_ERROR_SWEEP=all` runs every errno at
every N (by hand: hundreds of runs).
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

from tests.benchmarks.error_sweep import CALLS, ERRNOS, sampled, spread, summary, sweep

PER_GROUP = len(ERRNOS)

pytestmark = [
    pytest.mark.sweep,
    pytest.mark.skipif(
        shutil.which("strace") is None,
        reason="strace is not installed (.ci/run installs it; locally: apt-get install strace)",
    ),
]


def chosen(most: dict[str, int]) -> dict:
    if os.environ.get("PATCHKEEPER_ERROR_SWEEP") == "all":
        return spread(most)
    return sampled(most, PER_GROUP)


@pytest.mark.parametrize("command", ["update", "apply"])
def test_a_refused_write_or_rename_is_exit_7_naming_the_path_and_loses_nothing(
    command: str, tmp_path: Path
) -> None:
    most, outcomes = sweep(command, tmp_path, chosen)
    said = summary(command, most, outcomes)
    assert set(most) == set(CALLS) and min(most.values()) >= 5, said  # the run does write
    met = Counter((o.point[0], o.point[1]) for o in outcomes)
    assert len(met) == len(CALLS) * len(ERRNOS), said  # every errno met every kind of call
    assert sum(o.exit_code == 7 for o in outcomes) >= len(outcomes) // 2, said
    wrong = {o.point: [*o.verdict.lost, *o.verdict.torn, *o.verdict.wrong_exit]
             for o in outcomes if not o.right}  # fmt: skip
    assert not wrong, (said, wrong)
