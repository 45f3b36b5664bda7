"""A planted cron ledger for the sandbox's home, so that `audit` has something to show.

Two jobs in `home/cron/jobs.json`, both green on the dashboard (`last_status` ok, no failure
streak), and their executions in `home/cron/executions.db`, in the practice upstream's table
layout (`cron/executions.py`):

- `digest` ran and completed: nothing to report;
- `nightly-report`'s latest execution never started: the worker died on "database is locked"
  before adopting it (upstream issue #135487, what adoption-retry fixes), booked failed while
  the dashboard still shows the job green: a never-started execution and a green-but-failing
  job at once.

Written with plain SQLite (the practice code is not imported: opening its ledger would run its
schema script). The instants are relative to when it is planted, so `audit`'s per-day counts
show them.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

LEDGER = Path("cron") / "executions.db"
JOBS = Path("cron") / "jobs.json"
LOST_JOB = "nightly-report"
HEALTHY_JOB = "digest"
LOCKED = "OperationalError: database is locked"
_TABLE = """CREATE TABLE executions (
  id TEXT PRIMARY KEY, job_id TEXT NOT NULL, source TEXT NOT NULL, process_id TEXT NOT NULL,
  pid INTEGER NOT NULL, process_started_at INTEGER,
  status TEXT NOT NULL CHECK(status IN ('claimed','running','completed','failed','unknown')),
  claimed_at TEXT NOT NULL, started_at TEXT, finished_at TEXT, error TEXT,
  handoff_pending INTEGER NOT NULL DEFAULT 0, handoff_started_at REAL, delivery_outcome TEXT,
  scheduled_instant TEXT)"""


def plant_ledger(home: Path, now: datetime | None = None) -> Path:
    """Write the planted ledger and jobs file under HOME (which must have neither yet)."""
    now = now or datetime.now(UTC)
    ledger, jobs = home / LEDGER, home / JOBS
    ledger.parent.mkdir(parents=True, exist_ok=True)
    if ledger.exists() or jobs.exists():
        raise FileExistsError(f"{ledger.parent}: a ledger or jobs file is already there")

    def at(hours: float) -> str:
        return (now - timedelta(hours=hours)).isoformat()

    rows = [  # id, job, status, claimed, started, finished, error
        ("exec-digest-1", HEALTHY_JOB, "completed", at(3), at(3), at(2.9), None),
        ("exec-nightly-1", LOST_JOB, "completed", at(26), at(26), at(25.9), None),
        ("exec-nightly-2", LOST_JOB, "failed", at(2), None, at(2), LOCKED),
    ]
    conn = sqlite3.connect(ledger)
    try:
        with conn:
            conn.execute(_TABLE)
            conn.executemany(
                "INSERT INTO executions (id, job_id, source, process_id, pid, status, claimed_at,"
                " started_at, finished_at, error) VALUES (?, ?, 'scheduler', 'gateway-1', 4242,"
                " ?, ?, ?, ?, ?)",
                [(i, job, status, c, s, f, e) for i, job, status, c, s, f, e in rows],
            )
    finally:
        conn.close()
    entries = [
        {"id": job, "name": job, "enabled": True, "state": "scheduled", "last_status": "ok",
         "failure_streak": 0}
        for job in (HEALTHY_JOB, LOST_JOB)
    ]  # fmt: skip
    jobs.write_text(json.dumps({"jobs": entries}, indent=2) + "\n", encoding="utf-8")
    return ledger
