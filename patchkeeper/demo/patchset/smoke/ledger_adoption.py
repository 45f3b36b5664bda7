"""Smoke check: a cron worker adopts its claim even while the ledger is write-locked.

Reproduces upstream issue #135487 with real processes and the real ledger: the gateway's
side of a hand-off runs here (claim, fence, payload), another process holds the ledger's
write lock longer than its busy timeout, and the external worker must still adopt the
claim and write its ack. Unfixed, the worker dies with "database is locked" before its ack.

Runs with the install's interpreter, cwd at the install and HERMES_HOME pointing at a
scratch folder (patchkeeper's smoke runner sees to that). Uses only upstream names that
real Hermes has too: cron.executions.{create_execution, mark_execution_handoff_pending,
get_execution}, cron.scheduler.{run_one_job, _run_external_worker_payload}. The job itself
is replaced by a no-op in the worker, as upstream's own tests do: no agent, no network.
Prints one JSON verdict on stdout.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHECK = "ledger_adoption"
BUSY_TIMEOUT_SECONDS = 5.0  # the ledger's busy timeout (busy_timeout_ms=5000)
HOLD_SECONDS = BUSY_TIMEOUT_SECONDS + 2.0  # longer than one adoption attempt can wait
GRACE_SECONDS = 30.0  # HANDOFF_ADOPTION_GRACE_SECONDS: how long the gateway waits for the ack

HOLD_LOCK = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
"""
# The worker entry with the job replaced by a no-op; adoption and ack are upstream's own.
WORKER = """
import sys
from pathlib import Path
import cron.scheduler as scheduler
scheduler.run_one_job = lambda *args, **kwargs: None
ok = scheduler._run_external_worker_payload(Path(sys.argv[1]), Path(sys.argv[2]))
raise SystemExit(0 if ok else 1)
"""


class CheckError(Exception):
    """The check could not do its part: no verdict on the fix."""


def progress(text: str) -> None:
    print(f"progress: {text}", file=sys.stderr, flush=True)


@contextmanager
def timed_step(steps: list[dict[str, Any]], name: str) -> Iterator[dict[str, Any]]:
    """Record one step: `fail` on an AssertionError, `error` on anything else raised."""
    record: dict[str, Any] = {"name": name, "verdict": "pass", "detail": ""}
    steps.append(record)
    started = time.monotonic()
    try:
        yield record
    except AssertionError as exc:
        record.update(verdict="fail", detail=str(exc))
        raise
    except Exception as exc:
        record.update(verdict="error", detail=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        record["seconds"] = round(time.monotonic() - started, 3)


def hand_off(scratch: Path) -> tuple[str, Path, Path]:
    """The gateway's part: claim, fence for hand-off, write the worker payload."""
    from cron.executions import create_execution, mark_execution_handoff_pending

    execution_id = str(create_execution("smoke-ledger-adoption", source="smoke")["id"])
    if mark_execution_handoff_pending(execution_id) is None:
        raise CheckError("the fresh claim could not be fenced for hand-off")
    payload = scratch / "payload.json"
    job = {"id": "smoke-ledger-adoption", "execution_id": execution_id, "prompt": "smoke"}
    deadline = time.monotonic() + GRACE_SECONDS
    payload.write_text(json.dumps({"job": job, "adoption_deadline": deadline}), "utf-8")
    return execution_id, payload, scratch / "ack.json"


def ledger_file() -> Path:
    from cron import executions
    from hermes_constants import get_hermes_home

    return Path(executions.EXECUTIONS_FILE or get_hermes_home() / "cron" / "executions.db")


def run_worker_under_lock(payload: Path, ack: Path) -> subprocess.CompletedProcess[str]:
    """Run the worker while another process holds the ledger's write lock."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(ledger_file()), str(HOLD_SECONDS)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        if holder.stdout is None or holder.stdout.readline().strip() != "locked":
            raise CheckError("could not take the ledger's write lock")
        progress(f"holding the ledger's write lock for {HOLD_SECONDS:.0f} s")
        return subprocess.run(
            [sys.executable, "-c", WORKER, str(payload), str(ack)],
            capture_output=True,
            text=True,
            timeout=GRACE_SECONDS + HOLD_SECONDS,
            check=False,
        )
    finally:
        if holder.poll() is None:
            holder.wait(timeout=HOLD_SECONDS + 5)


def assert_adopted(execution_id: str, ack: Path, worker: subprocess.CompletedProcess[str]) -> str:
    from cron.executions import get_execution

    last = (worker.stderr.strip().splitlines() or ["(no output)"])[-1]
    assert ack.is_file(), f"worker exited {worker.returncode} before its ack: {last}"
    acked = json.loads(ack.read_text("utf-8"))
    assert acked.get("execution_id") == execution_id, f"ack names {acked.get('execution_id')}"
    status = (get_execution(execution_id) or {}).get("status")
    assert status in ("running", "completed"), f"ledger says {status!r} after the ack"
    return f"adopted under a {HOLD_SECONDS:.0f} s write lock, ack written, ledger: {status}"


def run_check(steps: list[dict[str, Any]], scratch: Path) -> None:
    with timed_step(steps, "hand-off") as record:
        execution_id, payload, ack = hand_off(scratch)
        record["detail"] = f"execution {execution_id} claimed and fenced for hand-off"
    with timed_step(steps, "adoption under a held write lock") as record:
        worker = run_worker_under_lock(payload, ack)
        record["detail"] = assert_adopted(execution_id, ack, worker)


def main() -> int:
    steps: list[dict[str, Any]] = []
    verdict = "pass"
    with tempfile.TemporaryDirectory(prefix="smoke-ledger-") as scratch:
        try:
            run_check(steps, Path(scratch))
        except AssertionError:
            verdict = "fail"
        except Exception:  # recorded in its step: could not check
            verdict = "error"
    print(json.dumps({"check": CHECK, "verdict": verdict, "steps": steps}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
