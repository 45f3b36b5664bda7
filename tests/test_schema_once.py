"""schema-once's own module, taken from the patch file, against real SQLite files (issue 14,
item 3): the schema comes back after the ledger is emptied in place or recreated, and a
connection costs one query once the schema is known, never a statement of the script."""

from __future__ import annotations

import importlib.util
import sqlite3
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from patchkeeper.patchset.bundled import bundled_patches

PATCH = bundled_patches() / "schema-once.patch"
SCRIPT = "CREATE TABLE IF NOT EXISTS executions (id INTEGER PRIMARY KEY, job_id TEXT)"


def added_file(patch: Path, path: str) -> str:
    """The content a patch's new-file section for PATH adds."""
    section = patch.read_text().split(f"diff --git a/{path} b/{path}\n", 1)[1]
    body = section.split("\n@@ ", 1)[1].split("\n", 1)[1].split("\ndiff --git ", 1)[0]
    return "".join(line[1:] + "\n" for line in body.splitlines() if line.startswith("+"))


@pytest.fixture
def module(tmp_path: Path) -> ModuleType:
    source = tmp_path / "ledger_schema_once.py"
    source.write_text(added_file(PATCH, "cron/ledger_schema_once.py"))
    spec = importlib.util.spec_from_file_location("ledger_schema_once_under_test", source)
    assert spec and spec.loader
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def ledger_call(path: Path, initialize: Callable[[sqlite3.Connection], None]) -> list[str]:
    """One upstream-style ledger call (a new connection, initialised, one INSERT); returns the
    statements the initialiser ran on it."""
    seen: list[str] = []
    conn = sqlite3.connect(path)
    # A table-valued pragma's own program is traced as a "-- PRAGMA" comment: not a query.
    conn.set_trace_callback(lambda sql: None if sql.startswith("--") else seen.append(sql))
    try:
        initialize(conn)
        statements = list(seen)
        conn.execute("INSERT INTO executions (job_id) VALUES ('j')")
        conn.commit()
    finally:
        conn.close()
    return statements


def script(conn: sqlite3.Connection) -> None:
    conn.execute(SCRIPT)


def test_the_script_runs_once_and_a_connection_costs_one_query(module, tmp_path: Path) -> None:
    once = module.once_per_database(script)
    ledger = tmp_path / "executions.db"
    first = ledger_call(ledger, once)
    assert SCRIPT in first
    for _ in range(5):
        later = ledger_call(ledger, once)
        assert len(later) == 1 and "CREATE" not in later[0].upper(), later


@pytest.mark.parametrize("how", ["emptied in place", "recreated"])
def test_the_schema_comes_back_after_the_ledger_is_emptied_or_recreated(
    module, tmp_path: Path, how: str
) -> None:
    once = module.once_per_database(script)
    ledger = tmp_path / "executions.db"
    ledger_call(ledger, once)
    ledger_call(ledger, once)
    if how == "emptied in place":
        inode = ledger.stat().st_ino
        with ledger.open("r+b") as file:
            file.truncate(0)
        assert ledger.stat().st_ino == inode
    else:
        ledger.unlink()
    assert SCRIPT in ledger_call(ledger, once)  # "no such table" before the fix
    assert len(ledger_call(ledger, once)) == 1


def test_a_reused_inode_is_not_mistaken_for_the_ledger_it_held(module, tmp_path: Path) -> None:
    """Another file on the inode of the old ledger (what ext4 does after a delete): moved
    into place here, so the inode is the old one for certain."""
    once = module.once_per_database(script)
    ledger = tmp_path / "executions.db"
    ledger_call(ledger, once)
    other = tmp_path / "other.db"
    ledger.rename(other)
    other.write_bytes(b"")  # the same inode, emptied
    other.rename(ledger)
    assert SCRIPT in ledger_call(ledger, once)


def test_a_script_that_raises_is_tried_again(module, tmp_path: Path) -> None:
    attempts: list[int] = []

    def flaky(conn: sqlite3.Connection) -> None:
        attempts.append(1)
        if len(attempts) == 1:
            raise sqlite3.OperationalError("database is locked")
        script(conn)

    once = module.once_per_database(flaky)
    with pytest.raises(sqlite3.OperationalError):
        ledger_call(tmp_path / "executions.db", once)
    ledger_call(tmp_path / "executions.db", once)
    assert len(attempts) == 2
