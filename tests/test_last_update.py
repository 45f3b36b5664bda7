"""The last update read back by its one reader as a run's end writes it
(install/records/last_update.py)."""

from __future__ import annotations

import json
from pathlib import Path

from patchkeeper.install.records import update_journal as jr
from patchkeeper.install.records.last_update import last_update, record_end


def _finished(state_dir: Path, run_id: str, **end: object) -> jr.Journal:
    journal = jr.Journal(run_id, 1, "2026-10-01T12:00:00+00:00", "a" * 40, "1.0", None)
    journal.upstream_ok = True
    journal.extra["retry"] = "patchkeeper update"
    record_end(journal, **end)  # type: ignore[arg-type]
    jr.save(state_dir, journal)
    jr.finish(state_dir, journal)
    return journal


def test_the_newest_finished_run_is_read_back_as_written(tmp_path: Path) -> None:
    assert last_update(tmp_path) is None
    _finished(tmp_path, "20261001T120000Z-1", exit_code=0, not_done=None, rolled_back=False,
              head_after="b" * 40)  # fmt: skip
    _finished(tmp_path, "20261002T120000Z-1", exit_code=5, not_done="it was interrupted",
              rolled_back=True, head_after="a" * 40)  # fmt: skip
    last = last_update(tmp_path)
    assert last is not None and last.unreadable is None
    assert (last.id, last.exit_code) == ("20261002T120000Z-1", 5)
    assert last.not_done == "it was interrupted"
    assert last.retry == "patchkeeper update" and last.head_after == "a" * 40
    assert not last.happened and last.missed == "happen"
    assert last.started == 1790856000.0
    # The file is the journal as it always was: the end's facts in `extra`.
    data = json.loads(last.path.read_text())
    assert data["extra"]["exit_code"] == 5 and data["extra"]["rolled_back"] is True


def test_an_unreadable_last_run_says_why_and_claims_nothing(tmp_path: Path) -> None:
    run = tmp_path / jr.RUNS_DIR / "20261003T120000Z-1"
    run.mkdir(parents=True)
    (run / jr.JOURNAL_FILE).write_text("[1, 2]")
    last = last_update(tmp_path)
    assert last is not None and last.unreadable == "unreadable (not an object)"
    assert (last.exit_code, last.not_done, last.happened) == (None, None, False)
