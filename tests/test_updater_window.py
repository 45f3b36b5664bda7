"""A kill in the moment the upstream updater starts (issue 26, item 1): `recover` must know the
updater before it can move HEAD, wait for it while it runs, and then tell the story the disk
holds; the operator's untracked file and edits survive.

The updater here is slow and stashes what it finds (as Hermes' does): before phase 4 started
it held behind a pipe, one that outlived a kill of patchkeeper in the instant after it started
ran on unknown to `recover`, which rolled back and said "the old version" while the updater
then stashed the operator's files and moved HEAD. The sweep of the window is
tests/benchmarks/window_sweep.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.kill_sweep import Fixture, build
from tests.benchmarks.window_sweep import WINDOW, window_point


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Fixture:
    return build(tmp_path_factory.mktemp("window") / "template", "update")


# The three points inside the start; "4" and "4.1" (the phase boundaries) are the sweep's
# and tests/test_recover.py's.
@pytest.mark.parametrize("point", WINDOW[1:4])
def test_a_kill_as_the_updater_starts_is_recovered_truthfully(
    template: Fixture, point: str, tmp_path: Path
) -> None:
    verdict = window_point(template, point, tmp_path)
    assert verdict.killed, point  # the kill point exists and was reached
    assert verdict.recovered, verdict
