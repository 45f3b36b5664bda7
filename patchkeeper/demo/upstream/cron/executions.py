"""Durable ledger of cron execution attempts, one row per attempt.

The gateway claims an attempt (`claimed`), fences it for a hand-off to an external worker,
and the worker adopts it (`running`) before it acknowledges or runs anything. Terminal
states (`completed`, `failed`, `unknown`) are never rewritten. Every call opens its own
connection; the module lock serialises callers inside one process only.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from hermes_constants import get_hermes_home
from hermes_time import now as _hermes_now

# Tests and profiles point this at another file. Read at transaction time, not import time.
EXECUTIONS_FILE: Path | None = None
MAX_TERMINAL_EXECUTIONS = 1000
HANDOFF_ADOPTION_GRACE_SECONDS = 30.0
_lock = threading.RLock()
_PROCESS_ID = uuid.uuid4().hex


def _connect() -> sqlite3.Connection:
    # Late imports: a scheduler that outlives an on-disk update keeps its old modules cached.
    from cron.jobs import _ensure_cron_dir
    from hermes_cli.sqlite_util import open_db

    path = EXECUTIONS_FILE or (get_hermes_home().resolve() / "cron" / "executions.db")
    _ensure_cron_dir(path.parent)
    return open_db(path, db_label="cron/executions.db", synchronous_full=True, initialize=_initialize_schema)


def _initialize_schema(conn: sqlite3.Connection) -> None:
    from hermes_cli.sqlite_util import add_column_if_missing

    conn.execute(
        """CREATE TABLE IF NOT EXISTS executions (
             id TEXT PRIMARY KEY,
             job_id TEXT NOT NULL,
             source TEXT NOT NULL,
             process_id TEXT NOT NULL,
             pid INTEGER NOT NULL,
             process_started_at INTEGER,
             status TEXT NOT NULL CHECK(status IN
               ('claimed','running','completed','failed','unknown')),
             claimed_at TEXT NOT NULL,
             started_at TEXT,
             finished_at TEXT,
             error TEXT
           )"""
    )
    # Columns added after the table first shipped.
    add_column_if_missing(conn, "executions", "handoff_pending",
                          "handoff_pending INTEGER NOT NULL DEFAULT 0")
    add_column_if_missing(conn, "executions", "handoff_started_at", "handoff_started_at REAL")
    add_column_if_missing(conn, "executions", "delivery_outcome", "delivery_outcome TEXT")
    add_column_if_missing(conn, "executions", "scheduled_instant", "scheduled_instant TEXT")
    conn.execute(
        "CREATE INDEX IF NOT EXISTS idx_executions_job_claimed "
        "ON executions(job_id, claimed_at DESC, id DESC)"
    )
    conn.execute(
        "CREATE INDEX IF NOT EXISTS idx_executions_status_claimed "
        "ON executions(status, claimed_at DESC, id DESC)"
    )


@contextmanager
def _transaction() -> Iterator[sqlite3.Connection]:
    from hermes_cli.sqlite_util import transaction

    with _lock, transaction(_connect()) as conn:
        yield conn


def _now() -> str:
    return _hermes_now().isoformat()


def _fetch(conn: sqlite3.Connection, execution_id: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT * FROM executions WHERE id=?", (execution_id,)).fetchone()
    return dict(row) if row is not None else None


def _process_start_time(pid: int) -> int | None:
    """PID's start time in clock ticks since boot (Linux), so a reused pid is not its owner."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def _prune_unlocked(conn: sqlite3.Connection) -> None:
    """Keep only the newest MAX_TERMINAL_EXECUTIONS terminal rows."""
    conn.execute(
        """DELETE FROM executions WHERE id IN (
             SELECT id FROM executions
             WHERE status IN ('completed','failed','unknown')
             ORDER BY finished_at DESC, claimed_at DESC, id DESC LIMIT -1 OFFSET ?
           )""",
        (max(0, MAX_TERMINAL_EXECUTIONS),),
    )


def create_execution(
    job_id: str, *, source: str, scheduled_instant: str | None = None
) -> dict[str, Any]:
    """Record a `claimed` attempt owned by this process, before anything is dispatched."""
    execution_id = uuid.uuid4().hex
    pid = os.getpid()
    with _transaction() as conn:
        conn.execute(
            """INSERT INTO executions
               (id, job_id, source, process_id, pid, process_started_at, status, claimed_at,
                scheduled_instant)
               VALUES (?, ?, ?, ?, ?, ?, 'claimed', ?, ?)""",
            (
                execution_id,
                str(job_id),
                str(source),
                _PROCESS_ID,
                pid,
                _process_start_time(pid),
                _now(),
                scheduled_instant,
            ),
        )
        record = _fetch(conn, execution_id)
    assert record is not None
    return record


def mark_execution_handoff_pending(execution_id: str) -> dict[str, Any] | None:
    """Fence this process's claim while an external worker adopts it; None if not ours."""
    with _transaction() as conn:
        cur = conn.execute(
            """UPDATE executions SET handoff_pending=1, handoff_started_at=?
               WHERE id=? AND status='claimed' AND process_id=? AND pid=?""",
            (time.time(), execution_id, _PROCESS_ID, os.getpid()),
        )
        return _fetch(conn, execution_id) if cur.rowcount == 1 else None


def adopt_claimed_execution(execution_id: str) -> dict[str, Any] | None:
    """Move a handed-off claim to `running` in this (worker) process, atomically.

    One compare-and-set UPDATE is the only `claimed` -> `running` gate: the winner gets the
    row; None means another owner won (or the claim was recovered) and must not be retried.
    """
    pid = os.getpid()
    with _transaction() as conn:
        cur = conn.execute(
            """UPDATE executions
               SET process_id=?, pid=?, process_started_at=?, status='running',
                   started_at=?, handoff_pending=0, handoff_started_at=NULL
               WHERE id=? AND status='claimed' AND handoff_pending=1""",
            (_PROCESS_ID, pid, _process_start_time(pid), _now(), execution_id),
        )
        return _fetch(conn, execution_id) if cur.rowcount == 1 else None


def finish_execution(
    execution_id: str,
    *,
    success: bool,
    error: str | None = None,
    delivery_outcome: str | None = None,
) -> dict[str, Any] | None:
    """Write the terminal state once, as the attempt's owner; None if not ours or final."""
    status = "completed" if success else "failed"
    detail = None if success else (error or "unknown failure")
    with _transaction() as conn:
        cur = conn.execute(
            """UPDATE executions
               SET status=?, finished_at=?, error=?, delivery_outcome=?, handoff_pending=0,
                   handoff_started_at=NULL
               WHERE id=? AND status IN ('claimed','running') AND process_id=? AND pid=?""",
            (status, _now(), detail, delivery_outcome, execution_id, _PROCESS_ID, os.getpid()),
        )
        if cur.rowcount != 1:
            return None
        _prune_unlocked(conn)
        return _fetch(conn, execution_id)


def get_execution(execution_id: str) -> dict[str, Any] | None:
    """One attempt by id, or None (a plain read: no write lock)."""
    with _lock, closing(_connect()) as conn:
        return _fetch(conn, str(execution_id))
