"""Smoke check: the cron ledger's schema script runs once per process and database file
(schema-once), and the ledger still works after it was emptied in place or recreated.

Run by `patchkeeper smoke` with the install's own interpreter, cwd at the install and a fresh
HERMES_HOME. Standard library only. It drives the install's own `cron.executions` in one
helper process (as a gateway does: one process, many ledger calls):

  1 schema once    20 ledger calls in one process run the schema script at most once
                   (CREATE/ALTER statements seen by a sqlite3 trace callback).
  2 emptied, recreated  the same process then empties the ledger in place (truncated to
                   0 bytes, same inode) and deletes it; a ledger call after each must work
                   (a schema remembered too well fails with "no such table").

Its helper-process plumbing (roles speaking tagged JSON lines, the verdict's steps) is
`ledger_adoption.py`'s, imported from this same folder (a check's own folder is first on
sys.path); the hand-off steps there are adoption-retry's proof, these are schema-once's, so
each fix is proven, or not, by its own steps. `--probe` (doctor's timeout budget) has no
chain to read here and says so (a pass with no steps).

Prints one JSON verdict on stdout and `progress: ...` lines on stderr. A missing upstream
function or a helper process that crashes is `error` ("could not check"), never a pass.
"""

from __future__ import annotations

import os
import re
import sqlite3
import sys
from pathlib import Path
from typing import Any

from ledger_adoption import (
    JOB_ID,
    RoleError,
    _executions,
    call_role,
    emit,
    ledger_file,
    overall,
    reply,
    step,
)

CHECK = "ledger_schema"
REQUIRED = ("create_execution", "mark_execution_handoff_pending")  # what the steps call
SCHEMA_CALLS = 20
_SCHEMA_RE = re.compile(r"^\s*(CREATE|ALTER)\b", re.IGNORECASE)


def _database_path(database: Any) -> Path | None:
    """The file a sqlite3.connect() argument names (a path or a file: URI)."""
    text = os.fsdecode(database) if isinstance(database, str | bytes | os.PathLike) else ""
    if text.startswith("file:"):
        text = text[len("file:") :].split("?", 1)[0]
    return Path(text).resolve() if text and text != ":memory:" else None


def role_schema(calls: int) -> None:
    """Count schema statements per ledger call across CALLS calls in this one process."""
    seen: list[str] = []
    connections = [0]
    real_connect = sqlite3.connect
    ledger = ledger_file(Path(os.environ["HERMES_HOME"])).resolve()

    def traced_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = real_connect(*args, **kwargs)
        if _database_path(kwargs.get("database", args[0] if args else "")) == ledger:
            conn.set_trace_callback(lambda sql: seen.append(sql) if _SCHEMA_RE.match(sql) else None)
            connections[0] += 1
        return conn

    sqlite3.connect = traced_connect  # before the install's modules bind it
    executions = _executions(REQUIRED)
    per_call = []
    current = None
    for number in range(calls):
        before = len(seen)
        if number % 2 == 0:
            current = executions.create_execution(JOB_ID, source="patchkeeper-smoke")["id"]
        else:
            executions.mark_execution_handoff_pending(current)
        per_call.append(len(seen) - before)
    survived = {how: _after(how, ledger, executions) for how in ("emptied", "recreated")}
    reply({
        "per_call": per_call,
        "connections": connections[0],
        "first": seen[:3],
        "survived": survived,
    })


def _after(how: str, ledger: Path, executions: Any) -> str:
    """A ledger call in this same process after the ledger was HOW: "" when it worked.

    emptied: its -wal and -shm removed and the file truncated to 0 bytes (same inode);
    recreated: every file removed, so the next call creates it anew (the inode may be
    reused). Either way the schema must be there again, whatever this process remembers.
    """
    for suffix in ("-wal", "-shm", "-journal"):
        ledger.with_name(ledger.name + suffix).unlink(missing_ok=True)
    if how == "emptied":
        with ledger.open("r+b") as file:
            file.truncate(0)
    else:
        ledger.unlink()
    try:
        executions.create_execution(JOB_ID, source="patchkeeper-smoke")
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return ""


class Check:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.survived: dict[str, str] = {}  # step 1's ledger emptied/recreated: error or ""

    def schema_once(self) -> tuple[str, str]:
        seen = call_role(self.home / "schema", "schema", str(SCHEMA_CALLS), script=__file__)
        if not seen["connections"]:
            raise RoleError("no ledger connection was seen: cannot count schema statements")
        ran = [count for count in seen["per_call"] if count]
        total = sum(ran)
        said = f"schema ran in {len(ran)} of {SCHEMA_CALLS} ledger calls ({total} statements)"
        self.survived = seen["survived"]
        return ("pass" if len(ran) <= 1 else "fail"), said

    def schema_survives(self) -> tuple[str, str]:
        """After step 1's calls, the same process empties the ledger in place, then deletes
        it: the next ledger call must find its table (no "no such table" until a restart)."""
        if not self.survived:
            raise RoleError("step 1 did not run: nothing to judge")
        broken = [f"{how}: {error}" for how, error in self.survived.items() if error]
        if broken:
            return "fail", "a ledger call after the ledger was " + "; ".join(broken)
        return "pass", "ledger calls work after the ledger was emptied in place and recreated"


def run(home: Path) -> dict[str, Any]:
    check = Check(home)
    steps = [
        step("1 schema once", check.schema_once),
        step("2 ledger emptied, recreated", check.schema_survives),
    ]
    return {"check": CHECK, "verdict": overall(steps), "steps": steps,
            "python": sys.version.split()[0], "schema_calls": SCHEMA_CALLS}  # fmt: skip


def main(argv: list[str]) -> int:
    if argv[:2] == ["--role", "schema"]:
        role_schema(int(argv[2]))
        return 0
    home = Path(os.environ.get("HERMES_HOME") or "")
    if not os.environ.get("HERMES_HOME") or not home.is_dir():
        emit({"check": CHECK, "verdict": "error", "steps": [], "detail": "HERMES_HOME not set"})
        return 1
    if argv[:1] == ["--probe"]:  # doctor reads timing chains: schema-once has none
        detail = "no timeout budget: schema-once's steps run with `patchkeeper smoke`"
        emit({"check": CHECK, "verdict": "pass", "steps": [], "detail": detail})
        return 0
    document = run(home)
    emit(document)
    return 0 if document["verdict"] == "pass" else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
