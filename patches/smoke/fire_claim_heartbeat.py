"""Smoke check: the fire-claim heartbeat renews while its own run holds the fire fence.

Seed 000's experiment, on the install's own `cron.jobs` (upstream PR #109310; issues #100401,
#108341). Run by `patchkeeper smoke` with the install's interpreter, cwd at the install and a
fresh HERMES_HOME. Standard library only. Threads and events stage every wait; nothing sleeps:

  1 same owner under the fence  a holder thread takes the job's fire fence the way a run holds it
                                across delivery (`fire_claim_fence`) and waits on an event; the
                                heartbeat for the same owner must renew (True, `at` refreshed,
                                owner unchanged) within the fence's own wait, which the check
                                shortens to FENCE_WAIT seconds. On code without the fix it waits
                                for the fence, times out and answers False while the owner has
                                not changed: `fail`, naming both facts.
  2 other owner refused         the fence still held, the heartbeat for another owner answers
                                False and leaves the claim as it was.
  3 unreadable store not lost   with a torn jobs.json, the heartbeat must not answer False:
                                an unknown owner is "could not verify" (it raises), never
                                "ownership lost".

A function the check needs that the install lacks, a fence the holder cannot take, or a store
the setup cannot write is `error` ("could not check"), never a pass. Prints one JSON verdict on
stdout and `progress: ...` lines on stderr.

`--probe` (doctor) only reads: whether the installed heartbeat_fire_claim calls a fire-fence
helper (from its parsed source, docstrings aside) and the fence's wait. A heartbeat that waits
on the fence its run holds fails the budget: any delivery longer than that wait is booked lost.
An install without the function has no such budget (pass, said so).

The verdict plumbing (`step`, `overall`, `emit`) is `ledger_adoption.py`'s,
imported from this same folder (a check's own folder is first on sys.path).
"""

from __future__ import annotations

import ast
import inspect
import os
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ledger_adoption import RoleError, emit, overall, step

CHECK = "fire_claim_heartbeat"
JOB_ID = "patchkeeper-smoke-heartbeat"
OWNER = "patchkeeper-smoke-host:1:run-token"
OTHER_OWNER = "patchkeeper-smoke-host:2:replacement-token"
OLD_STAMP = "2026-09-12T00:00:00+00:00"
FENCE_WAIT = 0.5  # the fence's wait (`_JOBS_LOCK_TIMEOUT_SECONDS`, 30 s upstream) for the check
ANSWER_LIMIT = 10.0  # seconds any heartbeat call may take before the check stops waiting
REQUIRED = ("heartbeat_fire_claim", "fire_claim_fence", "save_jobs", "load_jobs")
# What takes the job's fire fence in cron.jobs (the helper and the context managers).
FENCE_TAKERS = frozenset({"_under_fire_fence", "_fire_job_lock", "fire_claim_fence"})


class CannotCheck(RoleError):
    """The path could not be driven: the verdict is `error`, never a pass (ledger_adoption's
    `step` makes it one)."""


def cron_jobs() -> Any:
    """The install's own cron.jobs with every function the check drives."""
    try:
        import cron.jobs as jobs
    except Exception as exc:
        raise CannotCheck(f"cannot import cron.jobs: {type(exc).__name__}: {exc}") from exc
    missing = [name for name in REQUIRED if not callable(getattr(jobs, name, None))]
    if missing:
        raise CannotCheck(f"cron.jobs has no {missing[0]}() (upstream renamed it?)")
    return jobs


class Call:
    """One call on a thread of its own, so the check can stop waiting without killing it."""

    def __init__(self, action: Callable[[], Any]) -> None:
        self.answer: Any = None
        self.error: BaseException | None = None
        self.seconds = 0.0
        self.done = threading.Event()
        self._action = action
        threading.Thread(target=self._run, name="cron-fire-claim-heartbeat", daemon=True).start()

    def _run(self) -> None:
        started = time.monotonic()
        try:
            self.answer = self._action()
        except BaseException as exc:
            self.error = exc
        finally:
            self.seconds = time.monotonic() - started
            self.done.set()

    def said(self) -> str:
        if not self.done.is_set():
            return f"no answer within {ANSWER_LIMIT:g} s"
        if self.error is not None:
            return f"raised {type(self.error).__name__}: {self.error} after {self.seconds:.2f} s"
        return f"answered {self.answer!r} after {self.seconds:.2f} s"


class FenceHolder:
    """A thread that holds the job's fire fence, as a run does across a slow delivery."""

    def __init__(self, jobs: Any) -> None:
        self.jobs = jobs
        self.held = threading.Event()
        self.release = threading.Event()
        self.owns: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._hold, name="cron-run", daemon=True)

    def _hold(self) -> None:
        try:
            with self.jobs.fire_claim_fence(JOB_ID, expected_owner=OWNER) as owns:
                self.owns = owns
                self.held.set()
                self.release.wait(ANSWER_LIMIT * 3)
        except BaseException as exc:
            self.error = exc
            self.held.set()

    def __enter__(self) -> FenceHolder:
        self.thread.start()
        if not self.held.wait(ANSWER_LIMIT):
            raise CannotCheck(f"the holder did not take the fire fence within {ANSWER_LIMIT:g} s")
        if self.error is not None:
            raise CannotCheck(f"the holder could not take the fire fence: {self.error!r}")
        if self.owns is not True:
            raise CannotCheck(f"fire_claim_fence gave the owner {self.owns!r}, not True")
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release.set()
        self.thread.join(ANSWER_LIMIT)


class Check:
    def __init__(self, jobs: Any) -> None:
        self.jobs = jobs
        self.facts: dict[str, Any] = {}

    def heartbeat(self, owner: str) -> Call:
        call = Call(lambda: self.jobs.heartbeat_fire_claim(JOB_ID, expected_owner=owner))
        call.done.wait(ANSWER_LIMIT)
        return call

    def claim(self) -> dict[str, Any] | None:
        record = next((j for j in self.jobs.load_jobs() if j.get("id") == JOB_ID), None)
        claim = record.get("fire_claim") if isinstance(record, dict) else None
        return claim if isinstance(claim, dict) else None

    def setup(self) -> None:
        wait = getattr(self.jobs, "_JOBS_LOCK_TIMEOUT_SECONDS", None)
        shortened = isinstance(wait, int | float) and not isinstance(wait, bool)
        if shortened:
            self.jobs._JOBS_LOCK_TIMEOUT_SECONDS = FENCE_WAIT
        # None: the install has no such setting, so an unfixed heartbeat waits its own time.
        self.facts["fence_wait_install_seconds"] = wait if shortened else None
        self.facts["fence_wait_check_seconds"] = FENCE_WAIT if shortened else None
        record = {
            "id": JOB_ID,
            "name": "patchkeeper smoke: fire-claim heartbeat",
            "enabled": True,
            "state": "scheduled",
            "schedule": {"kind": "interval", "minutes": 60, "display": "every 60m"},
            "fire_claim": {"at": OLD_STAMP, "by": OWNER},
        }
        try:
            self.jobs.save_jobs([record])
            claim = self.claim()
        except Exception as exc:
            raise CannotCheck(f"cannot write the job store: {type(exc).__name__}: {exc}") from exc
        if claim != record["fire_claim"]:
            raise CannotCheck(f"the job store did not keep the claim written (read {claim!r})")

    # ------------------------------------------------------------ the steps

    def same_owner_under_fence(self) -> tuple[str, str]:
        with FenceHolder(self.jobs):
            call = self.heartbeat(OWNER)
            claim = self.claim()
        owner = claim.get("by") if claim else None
        unchanged = f"the claim's owner had not changed ({owner!r} still held it)"
        if owner != OWNER:
            return "fail", f"{call.said()}; the claim's owner became {owner!r}"
        if call.done.is_set() and call.error is None and call.answer is True:
            if claim is not None and claim.get("at") == OLD_STAMP:
                return "fail", f"{call.said()} but the claim's stamp was not refreshed"
            return "pass", f"renewed while the run held the fire fence ({call.said()})"
        if call.done.is_set() and call.error is None and call.answer is False:
            wait = self.facts["fence_wait_check_seconds"]
            waited = f", the fence's wait being {wait:g} s" if wait else ""
            return "fail", (
                f"the heartbeat for the same owner was refused while the run held the fire "
                f"fence ({call.said()}{waited}), and {unchanged}: a busy fence reported as "
                "ownership lost"
            )
        return "fail", (
            f"the heartbeat for the same owner did not renew while the run held the fire fence "
            f"({call.said()}), and {unchanged}"
        )

    def other_owner_refused(self) -> tuple[str, str]:
        with FenceHolder(self.jobs):
            before = self.claim()
            call = self.heartbeat(OTHER_OWNER)
            after = self.claim()
        if after != before:
            return "fail", f"{call.said()} and the claim changed from {before!r} to {after!r}"
        if call.done.is_set() and call.error is None and call.answer is False:
            return "pass", f"refused ({call.said()}); the claim stayed with {OWNER!r}"
        return "fail", f"the heartbeat for another owner was not refused: {call.said()}"

    def unreadable_store_not_lost(self) -> tuple[str, str]:
        store = Path(os.environ["HERMES_HOME"]) / "cron" / "jobs.json"
        current = getattr(self.jobs, "_current_cron_store", None)
        if callable(current):
            store = Path(current().jobs_file)
        if not store.is_file():
            raise CannotCheck(f"the job store is not where expected ({store})")
        store.write_text('{"jobs": [{"id": "torn', encoding="utf-8")
        call = self.heartbeat(OWNER)
        if not call.done.is_set():
            return "fail", f"the heartbeat hung on an unreadable store ({call.said()})"
        if call.error is not None:
            return "pass", f"could not verify, and said so: {call.said()}"
        return "fail", (
            f"an unreadable store gave an answer about the owner ({call.said()}); "
            "could not verify is not ownership lost"
        )


def run() -> dict[str, Any]:
    try:
        check = Check(cron_jobs())
        check.setup()
    except CannotCheck as exc:
        failed = {"name": "setup", "verdict": "error", "detail": str(exc), "seconds": 0.0}
        return {"check": CHECK, "verdict": "error", "steps": [failed], "detail": str(exc)}
    steps = [
        step("1 same owner under the fence", check.same_owner_under_fence),
        step("2 other owner refused", check.other_owner_refused),
        step("3 unreadable store not lost", check.unreadable_store_not_lost),
    ]
    return {
        "check": CHECK,
        "verdict": overall(steps),
        "steps": steps,
        "python": sys.version.split()[0],
        "answer_limit_seconds": ANSWER_LIMIT,
        **check.facts,
    }


def fence_calls(function: Any) -> list[str]:
    """The fire-fence helpers FUNCTION's code calls (its docstring and comments aside)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    called = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name in FENCE_TAKERS:
                called.append(name)
    return sorted(set(called))


def budget_step(jobs: Any) -> dict[str, Any]:
    heartbeat = getattr(jobs, "heartbeat_fire_claim", None)
    if not callable(heartbeat):
        detail = "this install has no cron.jobs.heartbeat_fire_claim: no heartbeat waits on a fence"
        return {"name": "heartbeat budget", "verdict": "pass", "detail": detail}
    try:
        takers = fence_calls(heartbeat)
    except (OSError, TypeError, SyntaxError) as exc:
        detail = f"could not read heartbeat_fire_claim's source: {type(exc).__name__}: {exc}"
        return {"name": "heartbeat budget", "verdict": "error", "detail": detail}
    wait = getattr(jobs, "_JOBS_LOCK_TIMEOUT_SECONDS", None)
    if not takers:
        detail = "heartbeat_fire_claim takes no fire fence: a slow delivery cannot starve it"
        return {"name": "heartbeat budget", "verdict": "pass", "detail": detail}
    limit = f"{wait:g} s" if isinstance(wait, int | float) else "its wait"
    detail = (
        f"heartbeat_fire_claim calls {', '.join(takers)}: it waits on the fire fence its own run "
        f"holds across delivery, so a delivery longer than {limit} is booked "
        '"fire claim ownership lost" (patch heartbeat-fence)'
    )
    return {"name": "heartbeat budget", "verdict": "fail", "detail": detail}


def probe() -> dict[str, Any]:
    try:
        import cron.jobs as jobs
    except Exception as exc:
        why = f"cannot import cron.jobs: {type(exc).__name__}: {exc}"
        failed = {"name": "heartbeat budget", "verdict": "error", "detail": why}
        return {"check": CHECK, "verdict": "error", "steps": [failed], "detail": why}
    wait = getattr(jobs, "_JOBS_LOCK_TIMEOUT_SECONDS", None)
    found = budget_step(jobs)
    facts = {"fence_wait_seconds": wait if isinstance(wait, int | float) else None}
    return {"check": CHECK, "verdict": found["verdict"], "steps": [found], **facts}


def main(argv: list[str]) -> int:
    home = os.environ.get("HERMES_HOME") or ""
    if not home or not Path(home).is_dir():
        emit({"check": CHECK, "verdict": "error", "steps": [], "detail": "HERMES_HOME not set"})
        return 1
    document = probe() if argv[:1] == ["--probe"] else run()
    emit(document)
    return 0 if document["verdict"] == "pass" else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
