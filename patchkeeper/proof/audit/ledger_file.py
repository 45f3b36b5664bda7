"""Reading the cron ledger and the delivery queue, each in one read-only SQLite snapshot.

Opened with `mode=ro` and never through upstream's code (opening its ledger runs schema
changes). "Locked" is decided by SQLite's result code, never by the message text.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from patchkeeper.install.records.instants import parse_instant
from patchkeeper.proof.audit.records import Execution, Ledger, text_or_none

LEDGER_PATH = Path("cron") / "executions.db"
# The restart-safe workers' delivery queue (cron/delivery_queue.py): one row per execution id.
DELIVERIES_PATH = Path("cron") / "deliveries.db"
# Primary SQLite result codes that mean "someone else holds the lock" (not "broken").
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6

# Columns the audit reads when they exist; every check names the ones it cannot do without.
_WANTED_COLUMNS = (
    "id", "job_id", "status", "claimed_at", "started_at", "error", "pid", "delivery_outcome",
)  # fmt: skip


class LedgerUnreadable(Exception):
    """The ledger could not be read at all; the message says why, in words for the report."""


def read_ledger(path: Path, busy_timeout: float) -> Ledger | None:
    """Every execution row, read in one read-only snapshot; None when the table does not exist.

    Raises LedgerUnreadable when the file is missing, locked past `busy_timeout`, or not a
    database. "Locked" is decided by SQLite's result code, never by the message text.
    """
    if not path.is_file():
        raise LedgerUnreadable(f"no ledger at {path}")
    with _snapshot(path, busy_timeout, "ledger") as conn:
        columns = _columns(conn, "executions")
        if not columns:
            return None
        present = [name for name in _WANTED_COLUMNS if name in columns]
        rows = conn.execute(f"SELECT {', '.join(present)} FROM executions").fetchall()
    return _ledger_from_rows(columns, [dict(zip(present, row, strict=True)) for row in rows])


def read_deliveries(path: Path, busy_timeout: float) -> dict[str, str] | None:
    """Delivery status by execution id from the delivery queue (`deliveries`, and the
    `delivery_tombstones` that keep the outcome of pruned rows); None when there is no queue
    file (only restart-safe workers create it). Raises LedgerUnreadable as read_ledger does."""
    if not path.is_file():
        return None
    statuses: dict[str, str] = {}
    with _snapshot(path, busy_timeout, "delivery queue") as conn:
        for table, column in (("delivery_tombstones", "terminal_status"), ("deliveries", "status")):
            if {"execution_id", column} <= _columns(conn, table):  # a live row wins
                rows = conn.execute(f"SELECT execution_id, {column} FROM {table}")
                statuses.update((str(key), str(status)) for key, status in rows)
    return statuses


@contextmanager
def _snapshot(path: Path, busy_timeout: float, what: str) -> Iterator[sqlite3.Connection]:
    """One read-only snapshot of the SQLite file PATH (WHAT names it in errors). "Locked" is
    decided by SQLite's result code, never by the message text."""
    try:
        conn = sqlite3.connect(
            f"file:{path}?mode=ro", uri=True, timeout=busy_timeout, isolation_level=None
        )
    except sqlite3.Error as exc:
        raise LedgerUnreadable(f"cannot open {what} {path}: {exc}") from exc
    try:
        conn.execute("BEGIN")  # one snapshot for the column probes and the rows
        yield conn
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorcode & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED):
            raise LedgerUnreadable(
                f"database is locked: a writer held {path} for more than {busy_timeout:g} s"
            ) from exc
        raise LedgerUnreadable(f"cannot read {what} {path}: {exc}") from exc
    except sqlite3.DatabaseError as exc:
        raise LedgerUnreadable(f"cannot read {what} {path}: {exc}") from exc
    finally:
        conn.close()


def _columns(conn: sqlite3.Connection, table: str) -> frozenset[str]:
    """TABLE's columns; empty when there is no such table."""
    return frozenset(row[1] for row in conn.execute(f"PRAGMA table_info({table})"))


def _ledger_from_rows(columns: frozenset[str], rows: list[dict[str, Any]]) -> Ledger:
    if "claimed_at" not in columns:  # every check needs it; each one says so on its own
        return Ledger(columns, len(rows), (), ())
    executions: list[Execution] = []
    bad: list[str] = []
    for row in rows:
        claimed_at = parse_instant(row.get("claimed_at"))
        if claimed_at is None:
            bad.append(f"{row.get('id')}: {row.get('claimed_at')!r}")
            continue
        started_raw = row.get("started_at")
        pid = row.get("pid")
        executions.append(
            Execution(
                id=str(row.get("id")),
                job_id=str(row.get("job_id")),
                status=str(row.get("status")),
                claimed_at=claimed_at,
                started=started_raw not in (None, ""),
                started_at=parse_instant(started_raw),
                error=text_or_none(row.get("error")),
                pid=pid if isinstance(pid, int) else None,
                delivery_outcome=text_or_none(row.get("delivery_outcome")),
            )
        )
    return Ledger(columns, len(rows), tuple(executions), tuple(bad))
