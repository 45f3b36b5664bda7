"""The job store (practice: the cron folder, the profile switch and the fire claim).

A job's run holds the job's fire fence (`_fire_job_lock`: a per-thread RLock waited on with a
timeout) across its delivery, and `heartbeat_fire_claim` renews the claim. At 0.21.2 the
heartbeat renews through the same fence, as Hermes did before upstream PR #109310: a renewal
from the heartbeat thread waits out the fence and answers False while the run still owns the
claim ("fire claim ownership lost"). 0.21.3 renews under the jobs lock only.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hermes_constants import get_hermes_home, reset_hermes_home_override, set_hermes_home_override

_jobs_file_lock = threading.RLock()
_fire_fence_locks: dict[str, threading.RLock] = {}
_fire_fence_locks_guard = threading.Lock()
_fire_fence_lock_state = threading.local()
# How long the fence (and nothing else here) is waited for before failing closed.
_JOBS_LOCK_TIMEOUT_SECONDS = 30.0


def _ensure_cron_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)


@contextmanager
def use_cron_store(profile_home: Path) -> Iterator[None]:
    """Run the body against PROFILE_HOME's cron store (jobs and ledger)."""
    token = set_hermes_home_override(profile_home)
    try:
        yield
    finally:
        reset_hermes_home_override(token)


def _jobs_file() -> Path:
    return get_hermes_home() / "cron" / "jobs.json"


def load_jobs() -> list[dict[str, Any]]:
    path = _jobs_file()
    if not path.exists():
        return []
    try:
        return json.loads(path.read_text(encoding="utf-8"))["jobs"]
    except (ValueError, KeyError, TypeError) as exc:
        raise RuntimeError(f"Cron database corrupted: {exc}") from exc


def save_jobs(jobs: list[dict[str, Any]]) -> None:
    path = _jobs_file()
    _ensure_cron_dir(path.parent)
    staged = path.with_suffix(".tmp")
    staged.write_text(json.dumps({"jobs": jobs}, indent=2), encoding="utf-8")
    os.replace(staged, path)


@contextlib.contextmanager
def _jobs_lock() -> Iterator[None]:
    with _jobs_file_lock:
        yield


def _with_job(job_id: str, fn: Callable[..., Any], missing: Any = None) -> Any:
    with _jobs_lock():
        jobs = load_jobs()
        for i, job in enumerate(jobs):
            if job.get("id") == job_id:
                return fn(jobs, i, job)
    return missing


@contextlib.contextmanager
def _fire_job_lock(job_id: str) -> Iterator[bool]:
    """One job's fence: re-entrant for the thread that holds it, waited for by any other."""
    with _fire_fence_locks_guard:
        local_lock = _fire_fence_locks.setdefault(job_id, threading.RLock())
    if not local_lock.acquire(timeout=_JOBS_LOCK_TIMEOUT_SECONDS):
        yield False
        return
    held = _fire_fence_lock_state.__dict__.setdefault("held", set())
    outermost = job_id not in held
    held.add(job_id)
    try:
        yield True
    finally:
        if outermost:
            held.discard(job_id)
        local_lock.release()


def _under_fire_fence(job_id: str, fn: Callable[[], Any]) -> Any:
    with _fire_job_lock(job_id) as acquired:
        if not acquired:
            return False
        return fn()


@contextlib.contextmanager
def fire_claim_fence(job_id: str, *, expected_owner: str) -> Iterator[bool]:
    """Held by a run across its side effects (delivery); yields whether it still owns the job."""
    with _fire_job_lock(job_id) as acquired:
        if not acquired:
            yield False
            return
        job = next((item for item in load_jobs() if item.get("id") == job_id), None)
        claim = job.get("fire_claim") if isinstance(job, dict) else None
        yield isinstance(claim, dict) and claim.get("by") == expected_owner


def _refresh_claim(jobs: list[dict[str, Any]], claim: Any, expected_owner: str) -> bool:
    if not isinstance(claim, dict) or claim.get("by") != expected_owner:
        return False
    claim["at"] = datetime.now(UTC).isoformat()
    save_jobs(jobs)
    return True


def claim_job_for_fire(job_id: str, *, owner: str) -> bool:
    def apply(jobs, _i, job):
        if job.get("fire_claim"):
            return False
        job["fire_claim"] = {"at": datetime.now(UTC).isoformat(), "by": owner}
        save_jobs(jobs)
        return True

    return _under_fire_fence(job_id, lambda: _with_job(job_id, apply, False))


def heartbeat_fire_claim(job_id: str, *, expected_owner: str) -> bool:
    """Keep a live run's claim fresh; only the owner that holds it may."""

    def apply(jobs, _i, job):
        return _refresh_claim(jobs, job.get("fire_claim"), expected_owner)

    return _under_fire_fence(job_id, lambda: _with_job(job_id, apply, False))


# Completed one-shots are retained in jobs.json (final status stays inspectable) and pruned by
# the retention sweep once they age out.
COMPLETED_ONESHOT_RETENTION_DAYS = 7
