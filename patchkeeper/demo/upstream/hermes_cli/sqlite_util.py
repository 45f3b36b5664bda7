"""Shared SQLite primitives for Hermes' small local stores (WAL files under HERMES_HOME)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

DEFAULT_BUSY_TIMEOUT_MS = 5000


def open_db(
    path: Path | str,
    *,
    db_label: str,
    busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    synchronous_full: bool = False,
    initialize: Callable[[sqlite3.Connection], None] | None = None,
) -> sqlite3.Connection:
    """One new autocommit connection: busy timeout, WAL, durability, then `initialize`.

    `initialize(conn)` runs on every connection opened here. Callers that open a connection
    per call pay for their schema script on every call.
    """
    conn = sqlite3.connect(path, timeout=busy_timeout_ms / 1000, isolation_level=None)
    conn.row_factory = sqlite3.Row
    try:
        conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={'FULL' if synchronous_full else 'NORMAL'}")
        if initialize is not None:
            initialize(conn)
    except BaseException as exc:
        conn.close()
        exc.add_note(f"while opening {db_label} ({path})")
        raise
    return conn


def add_column_if_missing(conn: sqlite3.Connection, table: str, column: str, ddl: str) -> bool:
    """Add COLUMN (defined by DDL) to TABLE unless a probe finds it; True when added here."""
    if column in {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}:
        return False
    try:
        conn.execute(f"ALTER TABLE {table} ADD COLUMN {ddl}")
    except sqlite3.OperationalError as exc:
        if "duplicate column name" not in str(exc).lower():
            raise
        return False  # another process added it between the probe and the ALTER
    return True


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """An IMMEDIATE write transaction on CONN, which is closed afterwards.

    IMMEDIATE takes the write lock up front: at most one writer proceeds, and a writer that
    cannot get the lock within the busy timeout fails here with "database is locked".
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            with contextlib.suppress(sqlite3.OperationalError):  # SQLite may have rolled back
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    finally:
        conn.close()
