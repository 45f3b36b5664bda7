"""`audit`: executions booked failed as a lost fire claim whose delivery succeeded (seed 000).

Real SQLite files: the ledger from tests/ledgers.py and a delivery queue
(HOME/cron/deliveries.db) with the layout of upstream's cron/delivery_queue.py as read at
029e38bc: `deliveries` keyed by execution id, and `delivery_tombstones` that keep the outcome
of pruned rows. The statements are ours.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import UTC, timedelta
from pathlib import Path

import pytest
from ledgers import (
    LOCKED_ERROR,
    NOW,
    ORIGINAL_COLUMNS,
    create_ledger,
    execution,
    insert,
    job,
    write_jobs,
)

from patchkeeper.model import exitcodes
from patchkeeper.proof.audit.findings import Check
from patchkeeper.proof.audit.reconcile import audit
from patchkeeper.report.audit import render_text, to_dict

REPO = Path(__file__).resolve().parents[1]
HOUR = timedelta(hours=1)
# What upstream's scheduler books (cron/scheduler.py, _record_fire_ownership_lost).
OWNERSHIP_LOST = "Fire claim ownership lost; stale result was discarded."
# What it books when the claim is still the run's own: the fence bug's usual text (#105861).
INTERRUPTED = "Interrupted by shutdown before terminal completion."
TITLE = "Delivered but booked failed as a lost fire claim (upstream #100401, #105861)"


def deliveries_db(
    home: Path, rows: dict[str, str], tombstones: dict[str, str] | None = None
) -> Path:
    """HOME/cron/deliveries.db with ROWS and TOMBSTONES (execution id -> status)."""
    path = home / "cron" / "deliveries.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    try:
        with conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(
                "CREATE TABLE deliveries (execution_id TEXT PRIMARY KEY, job_json TEXT NOT NULL, "
                "content TEXT NOT NULL, for_failure INTEGER NOT NULL DEFAULT 0, status TEXT NOT "
                "NULL CHECK(status IN ('pending','delivering','delivered','failed','unknown',"
                "'suppressed')), owner_process_id TEXT, owner_pid INTEGER, owner_started_at "
                "INTEGER, created_at TEXT NOT NULL, finished_at TEXT, error TEXT)"
            )
            conn.execute(
                "CREATE TABLE delivery_tombstones (execution_id TEXT PRIMARY KEY, "
                "terminal_status TEXT NOT NULL, finished_at TEXT)"
            )
            for key, status in rows.items():
                conn.execute(
                    "INSERT INTO deliveries (execution_id, job_json, content, status, "
                    "created_at) VALUES (?, '{}', '', ?, ?)",
                    (key, status, NOW.isoformat()),
                )
            for key, status in (tombstones or {}).items():
                conn.execute(
                    "INSERT INTO delivery_tombstones VALUES (?, ?, ?)", (key, status, None)
                )
    finally:
        conn.close()
    return path


def lost_run(job_id: str, **more: object) -> dict:
    """A run that started and was then booked failed as a takeover."""
    claimed = NOW - 2 * HOUR
    return execution(
        job_id, "failed", claimed, started_at=claimed + timedelta(seconds=1),
        error=OWNERSHIP_LOST, **more,
    )  # fmt: skip


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "hermes"
    path.mkdir()
    write_jobs(path, [job("a", last_status="error", failure_streak=1), job("b")])
    return path


def run_audit(home: Path):
    return audit(home, now=NOW, day_zone=UTC)


def test_a_run_the_queue_delivered_but_the_ledger_booked_lost_is_an_anomaly(home: Path) -> None:
    ledger = create_ledger(home)
    delivered, undelivered = lost_run("a"), lost_run("a")
    insert(ledger, delivered, undelivered, lost_run("a", id="pruned"))
    deliveries_db(
        home,
        {delivered["id"]: "delivered", undelivered["id"]: "failed"},
        tombstones={"pruned": "delivered"},
    )
    result = run_audit(home)
    assert result.unchecked == ()
    assert Check.DELIVERED_BUT_LOST in result.checked
    found = {item.execution_id: item.evidence for item in result.delivered_but_lost}
    assert found == {
        delivered["id"]: ("deliveries.db says delivered",),
        "pruned": ("deliveries.db says delivered",),  # kept by its tombstone
    }
    assert result.ownership_lost == 3
    assert result.anomalies == 2 and result.exit_code == exitcodes.ATTENTION
    text = render_text(result)
    assert f"{TITLE}: 2 of 3 booked lost" in text
    assert f"execution {delivered['id'][:12]} (2026-11-06 10:00:00) booked failed, but" in text


def test_the_interrupted_text_of_a_claim_still_owned_counts_too(home: Path) -> None:
    """Seen on 0.21.1 (#105861): the queue says delivered, the ledger failed with the
    shutdown-like text and no delivery_outcome: the ledger contradicts the delivery table."""
    ledger = create_ledger(home)
    run = execution(
        "b", "failed", NOW - HOUR, started_at=NOW - HOUR, error=INTERRUPTED, source="builtin"
    )
    insert(ledger, run)
    deliveries_db(home, {run["id"]: "delivered"})
    result = run_audit(home)
    assert [(item.execution_id, item.error) for item in result.delivered_but_lost] == [
        (run["id"], INTERRUPTED)
    ]


def test_the_ledgers_own_delivery_outcome_is_evidence_too(home: Path) -> None:
    ledger = create_ledger(home)
    run = lost_run("b", delivery_outcome="delivered")
    insert(ledger, run, lost_run("b", delivery_outcome="failed"))
    result = run_audit(home)  # no delivery queue: in-process deliveries write none
    [item] = result.delivered_but_lost
    assert (item.execution_id, item.job_name) == (run["id"], "job b")
    assert item.evidence == ("executions.delivery_outcome is delivered",)
    assert result.deliveries is None and result.unchecked == ()
    document = to_dict(result)
    assert document["ownership_lost"] == 2
    assert document["delivered_but_booked_lost"] == [
        {
            "execution_id": run["id"],
            "job_id": "b",
            "job_name": "job b",
            "claimed_at": (NOW - 2 * HOUR).isoformat(),
            "error": OWNERSHIP_LOST,
            "evidence": ["executions.delivery_outcome is delivered"],
        }
    ]


def test_lost_runs_without_a_delivery_are_counted_not_flagged(home: Path) -> None:
    ledger = create_ledger(home)
    run = lost_run("a")
    insert(ledger, run, execution("a", "failed", NOW - HOUR, error=LOCKED_ERROR))
    deliveries_db(home, {run["id"]: "unknown", "another-execution": "delivered"})
    result = run_audit(home)
    assert result.delivered_but_lost == () and result.ownership_lost == 1
    assert f"{TITLE}: none (1 booked so, none of them recorded as delivered in " in (
        render_text(result)
    )


def test_lost_runs_with_nothing_to_compare_are_could_not_check(home: Path) -> None:
    """The original layout has no delivery_outcome; without a queue there is no evidence."""
    ledger = create_ledger(home, columns=ORIGINAL_COLUMNS)
    insert(ledger, lost_run("a"))
    result = run_audit(home)
    assert Check.DELIVERED_BUT_LOST not in result.checked
    [item] = result.unchecked
    assert item.check is Check.DELIVERED_BUT_LOST
    assert item.reason == (
        "1 execution(s) booked failed as a lost fire claim, and no delivery record "
        f"to compare them with (no {home / 'cron' / 'deliveries.db'}, no delivery_outcome column)"
    )
    assert result.exit_code == exitcodes.ATTENTION
    assert f"{TITLE}: not checked" in render_text(result)


def test_no_lost_run_needs_no_delivery_record(home: Path) -> None:
    ledger = create_ledger(home, columns=ORIGINAL_COLUMNS)
    insert(ledger, execution("b", "completed", NOW - HOUR, started_at=NOW - HOUR))
    result = run_audit(home)
    assert result.unchecked == () and Check.DELIVERED_BUT_LOST in result.checked
    assert f"{TITLE}: none" in render_text(result)


def test_a_locked_delivery_queue_answers_could_not_check_and_is_not_written(home: Path) -> None:
    ledger = create_ledger(home)
    run = lost_run("a", delivery_outcome="delivered")
    insert(ledger, run)
    queue = deliveries_db(home, {run["id"]: "delivered"})
    conn = sqlite3.connect(queue, isolation_level=None)
    conn.execute("PRAGMA journal_mode=DELETE")  # an exclusive lock blocks readers here
    before = queue.read_bytes()
    conn.execute("BEGIN EXCLUSIVE")
    try:
        result = audit(home, now=NOW, day_zone=UTC, busy_timeout=0.2)
    finally:
        conn.execute("ROLLBACK")
        conn.close()
    [item] = result.unchecked
    assert item.check is Check.DELIVERED_BUT_LOST
    assert item.reason == (
        f"could not check the delivery queue: database is locked: a writer held {queue} "
        "for more than 0.2 s"
    )
    # The ledger's own column still speaks: the finding is kept, next to the could-not-check.
    assert [found.execution_id for found in result.delivered_but_lost] == [run["id"]]
    assert queue.read_bytes() == before


def test_cli_lists_them_and_exits_5(home: Path) -> None:
    ledger = create_ledger(home)
    run = lost_run("a")
    insert(ledger, run)
    deliveries_db(home, {run["id"]: "delivered"})
    env = {key: value for key, value in os.environ.items() if key != "HERMES_HOME"}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [sys.executable, "-m", "patchkeeper", "audit", "--home", str(home), "--json"],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60,
    )  # fmt: skip
    assert done.returncode == exitcodes.ATTENTION, done.stderr
    document = json.loads(done.stdout)
    assert document["deliveries"] == str(home / "cron" / "deliveries.db")
    assert [item["execution_id"] for item in document["delivered_but_booked_lost"]] == [run["id"]]
    assert "delivered_but_booked_lost" in document["checked"]
