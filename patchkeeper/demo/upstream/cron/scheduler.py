"""Cron scheduler: the external worker entry point.

The gateway claims an attempt in the ledger, fences it with
`mark_execution_handoff_pending`, writes a JSON payload and spawns

    python -m cron.scheduler --external-worker-file PAYLOAD --ack-file ACK

The payload is `{"job": {"id": ..., "execution_id": ..., ...}, "adoption_deadline": T}`,
T being the `time.monotonic()` instant at which the gateway stops waiting for the ack
(HANDOFF_ADOPTION_GRACE_SECONDS after the hand-off). The worker adopts the claim, writes
the ack file (`{"pid": ..., "execution_id": ...}`), runs the job and records the result.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from cron.executions import HANDOFF_ADOPTION_GRACE_SECONDS as HANDOFF_ADOPTION_GRACE_SECONDS
from cron.executions import adopt_claimed_execution, finish_execution


def run_one_job(job: dict[str, Any]) -> None:
    """Run one job. Practice jobs only say that they ran: no agent, no network."""
    print(f"cron job {job.get('id')} ran: {job.get('prompt', '')}", flush=True)


def _write_ack(ack_path: Path, execution_id: str) -> None:
    """Tell the gateway this worker owns the attempt (written whole, then renamed)."""
    partial = ack_path.with_name(ack_path.name + ".tmp")
    partial.write_text(json.dumps({"pid": os.getpid(), "execution_id": execution_id}))
    partial.replace(ack_path)


def _run_external_worker_payload(payload_path: Path, ack_path: Path) -> bool:
    """Adopt, acknowledge, run, record. Only the adoption winner may ack or run anything."""
    payload = json.loads(payload_path.read_text(encoding="utf-8"))
    job = payload["job"]
    execution_id = str(job["execution_id"])
    adopted = adopt_claimed_execution(execution_id)
    if adopted is None:
        print(f"cron worker: execution {execution_id} has another owner", file=sys.stderr)
        return False
    _write_ack(ack_path, execution_id)
    run_one_job(job)
    finish_execution(execution_id, success=True)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cron.scheduler")
    parser.add_argument("--external-worker-file", type=Path, required=True)
    parser.add_argument("--ack-file", type=Path, required=True)
    args = parser.parse_args(argv)
    return 0 if _run_external_worker_payload(args.external_worker_file, args.ack_file) else 1


if __name__ == "__main__":
    raise SystemExit(main())
