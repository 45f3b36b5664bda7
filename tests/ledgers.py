"""Build Hermes homes for tests: a cron ledger with upstream's table layout, and a jobs file.

The layout (column names, types, constraints) follows upstream `cron/executions.py` as read at
the commit noted in the audit report; the statements are ours. `ORIGINAL_COLUMNS` is the table
before upstream's later column additions (handoff_*, delivery_outcome, scheduled_instant), which
older installs still have.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

# name -> column definition, in upstream's column order
COLUMNS: dict[str, str] = {
    "id": "TEXT PRIMARY KEY",
    "job_id": "TEXT NOT NULL",
    "source": "TEXT NOT NULL",
    "process_id": "TEXT NOT NULL",
    "pid": "INTEGER NOT NULL",
    "process_started_at": "INTEGER",
    "status": (
        "TEXT NOT NULL CHECK(status IN ('claimed','running','completed','failed','unknown'))"
    ),
    "handoff_pending": "INTEGER NOT NULL DEFAULT 0",
    "handoff_started_at": "REAL",
    "claimed_at": "TEXT NOT NULL",
    "started_at": "TEXT",
    "finished_at": "TEXT",
    "error": "TEXT",
    "delivery_outcome": "TEXT",
    "scheduled_instant": "TEXT",
}
LATER_COLUMNS = ("handoff_pending", "handoff_started_at", "delivery_outcome", "scheduled_instant")
ORIGINAL_COLUMNS = tuple(name for name in COLUMNS if name not in LATER_COLUMNS)

NOW = datetime(2026, 11, 6, 12, 0, tzinfo=UTC)
NEW_YORK = timezone(timedelta(hours=-5))
BERLIN = timezone(timedelta(hours=1))

LOCKED_ERROR = "Worker failed before handoff: sqlite3.OperationalError: database is locked"
REFUSED_ERROR = "Dispatch claim rejected; execution was not started."
FIRE_LOST_ERROR = "Fire claim lost to another scheduler"


def create_ledger(home: Path, *, columns: Iterable[str] = tuple(COLUMNS), wal: bool = True) -> Path:
    """An empty ledger at HOME/cron/executions.db with the given columns (upstream's by default)."""
    path = home / "cron" / "executions.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = ", ".join(f"{name} {COLUMNS[name]}" for name in columns)
    with _connect(path) as conn:
        if wal:
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"CREATE TABLE executions ({body})")
        conn.execute("CREATE INDEX idx_job_claimed ON executions(job_id, claimed_at DESC, id DESC)")
    return path


def execution(
    job_id: str,
    status: str,
    claimed_at: datetime | str,
    *,
    started_at: datetime | str | None = None,
    error: str | None = None,
    **more: Any,
) -> dict[str, Any]:
    """One ledger row with plausible values for the columns a test does not care about."""
    row: dict[str, Any] = {
        "id": uuid.uuid4().hex,
        "job_id": job_id,
        "source": "scheduler",
        "process_id": uuid.uuid4().hex,
        "pid": 4242,
        "status": status,
        "claimed_at": _stamp(claimed_at),
        "started_at": _stamp(started_at),
        "error": error,
    }
    if status in ("completed", "failed", "unknown"):
        row["finished_at"] = row["claimed_at"]
    row.update(more)
    return row


def insert(path: Path, *rows: Mapping[str, Any]) -> None:
    """Insert ROWS, keeping only the columns this ledger has (so old layouts take the same rows)."""
    with _connect(path) as conn:
        present = {info[1] for info in conn.execute("PRAGMA table_info(executions)")}
        for row in rows:
            names = [name for name in row if name in present]
            marks = ", ".join("?" for _ in names)
            conn.execute(
                f"INSERT INTO executions ({', '.join(names)}) VALUES ({marks})",
                [row[name] for name in names],
            )


def job(
    job_id: str, *, last_status: str | None = "ok", failure_streak: int | None = 0, **fields: Any
) -> dict[str, Any]:
    """A jobs.json entry (failure_streak=None leaves the field out, as older versions did)."""
    entry: dict[str, Any] = {
        "id": job_id,
        "name": f"job {job_id}",
        "enabled": True,
        "state": "scheduled",
        "last_status": last_status,
    }
    if failure_streak is not None:
        entry["failure_streak"] = failure_streak
    entry.update(fields)
    return entry


def write_jobs(
    home: Path, jobs: list[dict[str, Any]], *, shape: str = "object", bom: bool = False
) -> Path:
    """HOME/cron/jobs.json in one of the shapes Hermes has used: object, list or map (by id)."""
    data: Any
    if shape == "object":
        data = {"jobs": jobs, "updated_at": NOW.isoformat()}
    elif shape == "list":
        data = jobs
    elif shape == "map":
        data = {entry["id"]: {k: v for k, v in entry.items() if k != "id"} for entry in jobs}
    else:
        raise ValueError(shape)
    path = home / "cron" / "jobs.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + json.dumps(data, indent=2).encode())
    return path


def _stamp(moment: datetime | str | None) -> str | None:
    return moment.isoformat() if isinstance(moment, datetime) else moment


@contextmanager
def _connect(path: Path) -> Iterator[sqlite3.Connection]:
    """A writer connection that commits on success and is closed in any case."""
    conn = sqlite3.connect(path)
    try:
        with conn:
            yield conn
    finally:
        conn.close()
