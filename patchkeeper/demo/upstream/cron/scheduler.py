"""Cron scheduler: ticks due jobs and hands each to a restart-safe external worker.

A managed gateway claims an attempt in the ledger, then `_launch_external_cron_worker`
fences it for hand-off, writes a JSON payload and spawns

    python -m cron.scheduler --external-worker-file PAYLOAD --ack-file ACK

and waits up to 5 s for the ack. The worker
(`_run_external_worker_payload`) adopts the claim, writes the ack (`{"pid", "execution_id"}`),
runs the job and records the result. Practice jobs only say that they ran.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from cron.executions import (
    create_execution,
    finish_execution,
    mark_execution_handoff_pending,
)
from cron.jobs import _ensure_cron_dir, use_cron_store
from hermes_constants import get_hermes_home as _get_hermes_home

logger = logging.getLogger("cron.scheduler")


def run_one_job(job: dict[str, Any], adapters: Any = None, loop: Any = None,
                verbose: bool = False) -> bool:
    """Run one job and record its end. Practice jobs print a line: no agent, no network."""
    del adapters, loop, verbose
    print(f"cron job {job.get('id')} ran: {job.get('prompt', '')}", flush=True)
    finish_execution(str(job["execution_id"]), success=True)
    return True


def tick(verbose: bool = False) -> int:
    """Run the due jobs once. The practice upstream has no job store: nothing is due."""
    del verbose
    return 0


def dispatch_job(job: dict[str, Any]) -> bool:
    """Claim an attempt for JOB and run it, in an external worker when the gateway is managed."""
    record = create_execution(str(job["id"]), source="scheduler")
    job = {**job, "execution_id": record["id"]}
    if _launch_external_cron_worker(job):
        return True
    return run_one_job(job)


def _launch_external_cron_worker(job: dict) -> bool:
    """Hand JOB to a worker process; False when this gateway runs cron work in-process."""
    from tools.process_registry import restart_safe_gateway_child_argv

    execution_id = str(job["execution_id"])
    handoff_dir = _get_hermes_home() / "cron" / "external-workers"
    payload_path = handoff_dir / f"{execution_id}.json"
    ack_path = handoff_dir / f"{execution_id}.ready"
    command = [sys.executable, "-m", "cron.scheduler",
               "--external-worker-file", str(payload_path), "--ack-file", str(ack_path)]
    argv = restart_safe_gateway_child_argv(command, unit_suffix=f"cron-{execution_id}")
    if argv == command:  # nothing to wrap it in: this gateway runs cron work in-process
        return False
    multiplex_active = False
    if mark_execution_handoff_pending(execution_id) is None:
        raise RuntimeError("cron execution claim changed before external worker handoff")
    _ensure_cron_dir(handoff_dir)
    fd = os.open(payload_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as payload_file:
            json.dump(
                {
                    "job": job,
                    "profile_home": str(_get_hermes_home().resolve()),
                    "multiplex_active": multiplex_active,
                },
                payload_file,
            )
    except BaseException:
        payload_path.unlink(missing_ok=True)
        raise
    process = subprocess.Popen(argv, cwd=str(Path(__file__).resolve().parent.parent),
                               stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        if ack_path.exists():
            ack_path.unlink()
            process.wait()
            return True
        if process.poll() is not None:
            payload_path.unlink(missing_ok=True)
            raise RuntimeError(
                f"cron external worker exited before ownership acknowledgement "
                f"(exit {process.returncode})"
            )
        time.sleep(0.05)
    logger.warning("cron external worker did not acknowledge within 5s")
    process.wait()
    return True


def _write_ack(ack_path: Path, execution_id: str) -> None:
    """Tell the gateway this worker owns the attempt (written whole, then renamed)."""
    partial = ack_path.with_name(ack_path.name + ".tmp")
    partial.write_text(json.dumps({"pid": os.getpid(), "execution_id": execution_id}))
    partial.replace(ack_path)


def _run_external_worker_payload(payload_path: Path, ack_path: Path) -> bool:
    """Adopt, acknowledge, run. Only the adoption winner may ack or run anything."""
    try:
        payload = json.loads(payload_path.read_text(encoding="utf-8"))
        job = payload["job"]
        profile_home = Path(payload["profile_home"]).resolve()
        execution_id = str(job["execution_id"])
    except Exception:
        logger.exception("cron worker could not load payload %s", payload_path)
        return False
    finally:
        payload_path.unlink(missing_ok=True)

    from agent.secret_scope import (
        build_profile_secret_scope,
        reset_secret_scope,
        set_secret_scope,
    )
    from cron.executions import adopt_claimed_execution
    from hermes_cli.env_loader import hydrate_profile_secret_sources
    from hermes_constants import (
        reset_hermes_home_override,
        set_hermes_home_override,
    )

    home_token = set_hermes_home_override(profile_home)
    hydrate_profile_secret_sources(profile_home)
    secret_token = set_secret_scope(build_profile_secret_scope(profile_home))
    try:
        with use_cron_store(profile_home):
            if adopt_claimed_execution(execution_id) is None:
                logger.error(
                    "Cron external worker refused execution %s: durable ownership "
                    "could not be established", execution_id,
                )
                return False
            _write_ack(ack_path, execution_id)
            return run_one_job(job, adapters=None, loop=None, verbose=False)
    finally:
        reset_secret_scope(secret_token)
        reset_hermes_home_override(home_token)


if __name__ == "__main__":
    if "--external-worker-file" in sys.argv:
        import argparse

        parser = argparse.ArgumentParser(add_help=False)
        parser.add_argument("--external-worker-file", type=Path, required=True)
        parser.add_argument("--ack-file", type=Path, required=True)
        args = parser.parse_args()
        raise SystemExit(
            0 if _run_external_worker_payload(args.external_worker_file, args.ack_file) else 1
        )
    tick(verbose=True)
