"""Smoke check: a handed-off cron execution survives a stalled ledger (Hermes #135487).

Run by `patchkeeper smoke` with the install's own interpreter, cwd at the install and a fresh
HERMES_HOME. Standard library only; Python 3.11 to 3.14. It drives the install's real code:

  1 happy path     a "gateway" process creates executions and hands each to the install's
                   own launcher (`cron.scheduler._launch_external_cron_worker`), with the
                   spawn captured instead of run: the worker payload, deadline included, is
                   what the gateway itself writes. A separate worker process then runs the
                   worker's own path (`_run_external_worker_payload`, what `python -m
                   cron.scheduler --external-worker-file` runs, with the job replaced by a
                   probe): the row is `running` with `started_at` and the ack is written.
  2 compare-and-set  a second adoption of the same row is refused (None) at once, one call.
  3 lock stall     a third process holds the ledger's write lock (BEGIN IMMEDIATE) for the
                   busy timeout + 2 s; a worker that starts adopting during the stall must
                   still adopt and ack before the gateway stops waiting (its wait, measured). A
                   backport that forgets the gateway's half (no deadline in the payload)
                   fails here.
  4 error classes  adopting from a corrupt ledger, and from one whose table lacks a
                   column (a non-busy OperationalError), raises at once, one attempt.

Step 3 on a gateway that waits only a hard-coded 5 s for the ack (Hermes before upstream PR
#110192, 0.21.0-0.21.2) fails without a stall being staged: a write lock held past the busy
timeout loses the hand-off whatever the worker does, and adoption-retry has no variant there;
the verdict's detail says so and names the way out (update Hermes to 0.21.3 first).
The schema steps of the same ledger (schema-once's proof) are `ledger_schema.py`, which runs
its helper processes with this file's plumbing.

`--probe` (doctor uses it) runs the path without the stall: the install's launcher, once
on a virtual clock to measure how long it waits for the ack and what deadline it writes,
once to hand off, and the worker's path on that hand-off; then it judges the chain: the
gateway passes its deadline and waits for as long as it gives the worker, the retry budget
covers two busy timeouts, the last attempt ends before the deadline. Every figure is read
from the code in place or measured by running it; one worked out from others says "derived"
in its source. Nothing is assumed: a figure that cannot be read makes the check `error`,
and a launcher that crashes (a name it does not define) is `error` naming the exception.

Prints one JSON verdict on stdout and `progress: ...` lines on stderr. A missing upstream
function or a helper process that crashes is `error` ("could not check"), never a pass.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import os
import selectors
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

CHECK = "ledger_adoption"
ROLE_TAG = "ledger_adoption_role"  # marks a helper's answers among whatever else is printed
JOB_ID = "patchkeeper-smoke"
ROLE_TIMEOUT = 60.0  # seconds any helper process may take (imports included)
STALL_MARGIN = 2.0  # the stall outlasts the busy timeout by this much (7 s for 5 s)
AT_ONCE = 2.0  # a refusal or a hard error must come back within this many seconds
UNKNOWN_CODE = -1  # an sqlite3.Error that carries no result code
BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
REQUIRED = ("create_execution", "mark_execution_handoff_pending", "adopt_claimed_execution")
# The retries a worker may call, by the name its source uses: (module, stop-margin constants).
RETRIES = {
    "adopt_while_busy": ("cron.adoption_busy_retry", ("ATTEMPT_SECONDS", "ACK_RESERVE_SECONDS")),
    "adopt_with_retry": ("cron.scheduler_adoption", ()),
}


def progress(text: str) -> None:
    print(f"progress: {text}", file=sys.stderr, flush=True)


def emit(document: dict[str, Any]) -> None:
    print(json.dumps(document), flush=True)


def reply(document: dict[str, Any]) -> None:
    """A helper's answer, tagged: upstream code may print JSON-looking lines too."""
    emit({ROLE_TAG: True, **document})


def ledger_file(home: Path) -> Path:
    return home / "cron" / "executions.db"


# ================================================================ helper roles (subprocesses)


def _fatal(reason: str) -> NoReturn:
    """End this helper with the JSON that tells the orchestrator it could not do its part."""
    reply({"role_error": reason})
    raise SystemExit(0)


def _executions(required: tuple[str, ...] = REQUIRED) -> Any:
    """cron.executions with every function REQUIRED names, or a fatal role error."""
    try:
        import cron.executions as executions
    except Exception as exc:
        _fatal(f"cannot import cron.executions: {type(exc).__name__}: {exc}")
    missing = [name for name in required if not callable(getattr(executions, name, None))]
    if missing:
        _fatal(f"cron.executions has no {missing[0]}() (upstream renamed it?)")
    return executions


def _module(name: str) -> Any:
    """The install's module NAME; None when it has none. One that does not import is fatal:
    a worker could not run it either, and the check must not fall back to another path."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return None
        _fatal(f"cannot import {name}: {type(exc).__name__}: {exc}")
    except Exception as exc:
        _fatal(f"cannot import {name}: {type(exc).__name__}: {exc}")


def _optional(module: str, name: str) -> Any:
    return getattr(_module(module), name, None)


def _error_code(exc: BaseException) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _busy_timeout(executions: Any) -> tuple[float, str]:
    """The ledger's busy timeout in seconds, read from a connection the install opens."""
    connect = getattr(executions, "_connect", None)
    if not callable(connect):
        _fatal("cron.executions has no _connect(): cannot read the ledger's busy timeout")
    try:
        conn = connect()
        try:
            (milliseconds,) = conn.execute("PRAGMA busy_timeout").fetchone()
        finally:
            conn.close()
    except Exception as exc:
        _fatal(f"cannot read the ledger's busy timeout: {type(exc).__name__}: {exc}")
    return milliseconds / 1000.0, "PRAGMA busy_timeout of cron.executions._connect()"


def _grace(executions: Any) -> tuple[float, str]:
    for module in (executions, _module("cron.scheduler")):
        value = _number(getattr(module, "HANDOFF_ADOPTION_GRACE_SECONDS", None))
        if value is not None:
            return value, f"{module.__name__}.HANDOFF_ADOPTION_GRACE_SECONDS"
    _fatal("no HANDOFF_ADOPTION_GRACE_SECONDS in cron.executions or cron.scheduler")


def _scheduler_function(name: str) -> Callable[..., Any]:
    function = getattr(_module("cron.scheduler"), name, None)
    if not callable(function):
        _fatal(f"cron.scheduler has no {name}() (upstream moved or renamed it?)")
    return function


def _worker_function() -> Callable[..., Any]:
    return _scheduler_function("_run_external_worker_payload")


def _source_calls(function: Callable[..., Any], name: str) -> bool:
    try:
        return name in inspect.getsource(function)
    except (OSError, TypeError):
        return False


def _retry_in_place(worker: Callable[..., Any]) -> tuple[str, str, tuple[str, ...]] | None:
    """(name, module, stop-margin constants) of the retry the worker calls, or None."""
    for name, (module, constants) in RETRIES.items():
        if _source_calls(worker, name + "(") and _optional(module, name) is not None:
            return name, module, constants
    return None


def _stop_margin(retry: tuple[str, str, tuple[str, ...]], busy: float) -> tuple[float, str]:
    """How long before the deadline the retry stops starting attempts, read from its module.

    A retry that names no constants is taken to keep room for one whole attempt (one busy
    timeout): that figure is derived, and says so.
    """
    _name, module, constants = retry
    values = [_number(_optional(module, constant)) for constant in constants]
    if constants and all(value is not None for value in values):
        named = " + ".join(f"{module}.{constant}" for constant in constants)
        return sum(v for v in values if v is not None), named
    return busy, f"derived: one busy timeout ({module} names no stop margin)"


def _facts(executions: Any, measured: dict[str, Any]) -> dict[str, Any]:
    """The timeout budget and the adoption path: constants read from the install's code,
    and what its launcher did when run (MEASURED, from `_measure_wait`)."""
    busy, busy_source = _busy_timeout(executions)
    grace, grace_source = _grace(executions)
    worker = _worker_function()
    retry = _retry_in_place(worker)
    horizon = measured["deadline_horizon_seconds"]
    facts: dict[str, Any] = {
        "grace_seconds": grace,
        "grace_source": grace_source,
        "busy_timeout_seconds": busy,
        "busy_timeout_source": busy_source,
        "gateway_wait_seconds": measured["gateway_wait_seconds"],
        "gateway_wait_source": "measured: the install's launcher, run until it stopped "
        "waiting for the ack (on a virtual clock)",
        "gateway_passes_deadline": horizon is not None,
        "worker_path": "cron.scheduler._run_external_worker_payload"
        + (f" -> {retry[0]} ({retry[1]})" if retry else " (one attempt)"),
        "worker_retries": retry is not None,
    }
    if horizon is not None:
        facts["deadline_horizon_seconds"] = horizon
    if retry is None or horizon is None:
        facts["retry_budget_seconds"] = busy
        why = "no retry" if retry is None else "no deadline in the payload"
        facts["retry_budget_source"] = f"derived: one attempt ({why}), one busy timeout"
        if retry is not None:
            facts["stop_margin_seconds"], facts["stop_margin_source"] = _stop_margin(retry, busy)
        return facts
    margin, margin_source = _stop_margin(retry, busy)
    facts["stop_margin_seconds"] = margin
    facts["stop_margin_source"] = margin_source
    facts["retry_budget_seconds"] = round(horizon - margin, 3)
    facts["retry_budget_source"] = "derived: the payload's deadline after spawn - stop margin"
    return facts


class _CapturedSpawn:
    """Stands in for the worker process the launcher starts: it has already exited."""

    pid = 0
    returncode: int | None = 0

    def poll(self) -> int | None:
        return 0

    def wait(self, timeout: float | None = None) -> int:
        return 0


class _NeverGaveUp(Exception):
    """The launcher waited longer than _VirtualClock.LIMIT for an ack that never came."""


class _VirtualClock:
    """`time.monotonic` and `time.sleep` for one launcher run: a sleep moves the clock on at
    once, so the launcher's ack wait (30 s, or 5 s before #110192) takes milliseconds, and
    the clock is never behind the real one (a deadline it writes stays a real instant)."""

    LIMIT = 3600.0

    def __init__(self) -> None:
        self.real_monotonic, self.real_sleep = time.monotonic, time.sleep
        self.skipped = 0.0

    def monotonic(self) -> float:
        return self.real_monotonic() + self.skipped

    def sleep(self, seconds: float) -> None:
        self.skipped += max(0.0, float(seconds))
        if self.skipped > self.LIMIT:
            raise _NeverGaveUp(f"the launcher still waited for its ack after {self.LIMIT:g} s")

    def __enter__(self) -> _VirtualClock:
        time.monotonic, time.sleep = self.monotonic, self.sleep  # type: ignore[assignment]
        return self

    def __exit__(self, *_exc: object) -> None:
        time.monotonic, time.sleep = self.real_monotonic, self.real_sleep  # type: ignore[assignment]


class _SilentSpawn(_CapturedSpawn):
    """A worker that runs and never acks: the launcher waits until it gives up. The moment
    it stops waiting (its first wait() on the worker, or its return) is noted on CLOCK."""

    returncode = None

    def __init__(self, clock: _VirtualClock, seen: dict[str, Any]) -> None:
        self.clock, self.seen = clock, seen

    def poll(self) -> int | None:
        return None

    def wait(self, timeout: float | None = None) -> int:
        self.seen.setdefault("gave_up_at", self.clock.monotonic())
        self.returncode = 0
        return 0


class _ManagedDispatch(list):
    """What `restart_safe_gateway_child_argv` answers for a managed gateway, in the shape
    of every launcher generation: 0.21.3 reads `.mode` and runs `.argv`; 0.21.0-0.21.2 take
    the argv list itself and run the job in-process only when it equals their command. So
    this is a list of the command's words that equals nothing but itself (a wrapped argv)."""

    mode = "direct"

    @property
    def argv(self) -> list[str]:
        return list(self)

    def __eq__(self, other: object) -> bool:
        return other is self

    def __ne__(self, other: object) -> bool:
        return other is not self

    __hash__ = None  # type: ignore[assignment]


def _launch_captured(
    launcher: Callable[..., Any], job: dict[str, Any], clock: _VirtualClock | None = None
) -> dict[str, Any]:
    """Run the install's own launcher for JOB, its spawn captured instead of run.

    The launcher marks the hand-off pending and writes the worker payload exactly as the
    gateway does; the payload is read at the moment it would spawn the worker. Without
    CLOCK the launcher then sees a worker that exited at once and gives up, which is
    expected here; with CLOCK it sees one that never acks, and waits it out on CLOCK.
    """
    import subprocess as subprocess_module

    seen: dict[str, Any] = {}
    registry = _module("tools.process_registry")
    if registry is None or not callable(getattr(registry, "restart_safe_gateway_child_argv", None)):
        _fatal("tools.process_registry.restart_safe_gateway_child_argv not found")

    def managed_dispatch(command: list[str], **_options: Any) -> Any:
        return _ManagedDispatch(command)

    def captured_popen(argv: list[str], *_args: Any, **_kwargs: Any) -> _CapturedSpawn:
        argv = [str(arg) for arg in argv]
        if "--external-worker-file" in argv:
            payload = Path(argv[argv.index("--external-worker-file") + 1])
            seen["payload"] = json.loads(payload.read_text(encoding="utf-8-sig"))
            seen["launched_at"] = time.monotonic()
        return _SilentSpawn(clock, seen) if clock is not None else _CapturedSpawn()

    registry.restart_safe_gateway_child_argv = managed_dispatch
    real_popen = subprocess_module.Popen
    subprocess_module.Popen = captured_popen  # type: ignore[misc,assignment]
    try:
        with clock or contextlib.nullcontext():
            try:
                launcher(job)
            finally:
                if clock is not None:
                    seen.setdefault("gave_up_at", clock.monotonic())
    except _NeverGaveUp as exc:
        _fatal(str(exc))
    except Exception as exc:
        if "payload" not in seen:
            _fatal(f"the launcher failed before it spawned a worker: {type(exc).__name__}: {exc}")
    finally:
        subprocess_module.Popen = real_popen  # type: ignore[misc]
    if "payload" not in seen:
        _fatal("the launcher spawned no worker (it ran the job in-process?)")
    return seen


def _measure_wait(executions: Any, launcher: Callable[..., Any]) -> dict[str, Any]:
    """How long the install's launcher waits for the ack, and how far after the spawn the
    deadline it writes into the payload lies (None: it writes none), from one run of it on
    an execution of its own (whatever it does to that row after giving up stays there)."""
    record = executions.create_execution(JOB_ID, source="patchkeeper-smoke")
    job = {"id": JOB_ID, "name": "patchkeeper smoke", "execution_id": record["id"]}
    seen = _launch_captured(launcher, job, _VirtualClock())
    deadline = _number(seen["payload"].get("adoption_deadline"))
    return {
        "gateway_wait_seconds": round(seen["gave_up_at"] - seen["launched_at"], 1),
        "deadline_horizon_seconds": None
        if deadline is None
        else round(deadline - seen["launched_at"], 1),
    }


def role_gateway(count: int) -> None:
    """Probe the budget (running the launcher once); create COUNT executions and hand each
    to the install's launcher."""
    executions = _executions()
    launcher = _scheduler_function("_launch_external_cron_worker")
    facts = _facts(executions, _measure_wait(executions, launcher))
    handoffs = []
    for _ in range(count):
        record = executions.create_execution(JOB_ID, source="patchkeeper-smoke")
        job = {"id": JOB_ID, "name": "patchkeeper smoke", "execution_id": record["id"]}
        seen = _launch_captured(launcher, job)
        handoffs.append({
            "id": record["id"],
            "payload": seen["payload"],
            # The gateway waits this long for the ack after spawning: its own deadline.
            "gateway_deadline": seen["launched_at"] + facts["gateway_wait_seconds"],
        })
    reply({"facts": facts, "handoffs": handoffs})


def _read_row(db: Path, execution_id: str) -> dict[str, Any] | None:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1.0)
    except sqlite3.Error:
        return None
    try:
        conn.row_factory = sqlite3.Row
        row = conn.execute(
            "SELECT status, started_at FROM executions WHERE id=?", (execution_id,)
        ).fetchone()
        return dict(row) if row else None
    except sqlite3.Error:
        return None
    finally:
        conn.close()


class _Worker:
    """One worker process's adoption, through the install's own worker path."""

    def __init__(self, payload_path: Path, scratch: Path) -> None:
        self.payload_path = payload_path
        payload = json.loads(payload_path.read_text(encoding="utf-8"))
        self.execution_id = str(payload["job"]["execution_id"])
        self.db = ledger_file(Path(payload["profile_home"]))
        self.calls: list[int | None] = []  # per adopt_claimed_execution call: error code or None
        self.job_ran_with: dict[str, Any] | None = None
        executions = _executions()
        real = executions.adopt_claimed_execution

        def counted(execution_id: str) -> Any:
            try:
                result = real(execution_id)
            except sqlite3.Error as exc:
                self.calls.append(_error_code(exc) or UNKNOWN_CODE)
                raise
            self.calls.append(None)
            return result

        # Before the worker path imports it, so every `from cron.executions import` sees it.
        executions.adopt_claimed_execution = counted
        self.ack = scratch / f"{self.execution_id}.ready"
        self.worker = _worker_function()
        sys.modules["cron.scheduler"].run_one_job = self._job_probe  # the job never runs

    def _job_probe(self, *args: Any, **kwargs: Any) -> bool:
        """Stands in for the job: what the ledger and the ack say when the job would start."""
        ack = None
        if self.ack.is_file():
            try:
                ack = json.loads(self.ack.read_text(encoding="utf-8"))
            except ValueError:
                ack = "unreadable"
        self.job_ran_with = {"row": _read_row(self.db, self.execution_id), "ack": ack}
        return True

    def run(self) -> dict[str, Any]:
        start = time.monotonic()
        outcome, error, code = "refused", "", None
        try:
            if self.worker(self.payload_path, self.ack):
                outcome = "adopted"
        except Exception as exc:
            outcome, error, code = "raised", f"{type(exc).__name__}: {exc}", _error_code(exc)
        end = time.monotonic()
        return {
            "outcome": outcome,
            "error": error,
            "code": code,
            "start": start,
            "end": end,
            "seconds": end - start,
            "calls": len(self.calls),
            "call_codes": self.calls,
            "path": "_run_external_worker_payload",
            "job": self.job_ran_with,
        }


def role_worker(payload_path: Path, scratch: Path) -> None:
    worker = _Worker(payload_path, scratch)
    reply({"ready": True})
    sys.stdin.readline()  # "go": sent once the stage is set
    reply(worker.run())


def role_holder(db: Path, hold: float) -> None:
    """Hold the ledger's write lock for HOLD seconds, as a stalled writer would."""
    conn = sqlite3.connect(str(db), timeout=ROLE_TIMEOUT, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    reply({"locked": time.monotonic()})
    time.sleep(hold)
    conn.execute("ROLLBACK")
    conn.close()
    reply({"released": time.monotonic()})


# ================================================================ the orchestrator


class RoleError(Exception):
    """A helper process could not do its part: the check cannot conclude ("error")."""


class Role:
    """One helper process: this file run with --role, speaking one JSON object per line."""

    def __init__(self, home: Path, role: str, *args: str, script: str = __file__) -> None:
        env = dict(os.environ, HERMES_HOME=str(home))
        argv = [sys.executable, "-B", script, "--role", role, *args]
        self.name = role
        home.mkdir(parents=True, exist_ok=True)
        # A file, not a pipe: upstream logging must never block a helper on a full pipe.
        fd, log = tempfile.mkstemp(prefix=f"{role}-", suffix=".stderr", dir=home)
        self.log = Path(log)
        with os.fdopen(fd, "w") as stderr:
            self.proc = subprocess.Popen(
                argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
            )
        assert self.proc.stdout is not None
        self.stdout = self.proc.stdout.fileno()
        self.pending = b""
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.stdout, selectors.EVENT_READ)

    def read(self, deadline: float) -> dict[str, Any]:
        """The next JSON object it prints (waiting at most until DEADLINE, monotonic).

        Reads raw bytes and splits lines itself: a buffered readline() after select() could
        hold a second line in its buffer while select() waits for more.
        """
        while True:
            while b"\n" in self.pending:
                line, self.pending = self.pending.split(b"\n", 1)
                try:
                    document = json.loads(line)
                except ValueError:
                    continue  # upstream code printing on stdout
                if isinstance(document, dict) and document.get(ROLE_TAG) is True:
                    if "role_error" in document:
                        raise RoleError(document["role_error"])
                    return document
            if not self.selector.select(max(0.0, deadline - time.monotonic())):
                self.proc.kill()
                raise RoleError(f"{self.name} process did not answer in time")
            chunk = os.read(self.stdout, 65536)
            if not chunk:
                raise RoleError(f"{self.name} process {self._crash()}")
            self.pending += chunk

    def _crash(self) -> str:
        self.proc.wait()
        text = self.log.read_text(encoding="utf-8", errors="replace")
        lines = [line for line in text.splitlines() if line.strip()]
        return f"crashed (exit {self.proc.returncode}): {lines[-1] if lines else 'no output'}"

    def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.selector.close()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


def call_role(home: Path, role: str, *args: str, script: str = __file__) -> dict[str, Any]:
    helper = Role(home, role, *args, script=script)
    try:
        return helper.read(time.monotonic() + ROLE_TIMEOUT)
    finally:
        helper.close()


class Check:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.ledger_home = home / "ledger"
        self.scratch = home / "handoff"
        self.scratch.mkdir(parents=True, exist_ok=True)
        self.facts: dict[str, Any] = {}
        self.latency: dict[str, float] = {}
        self.workers = 0

    # ------------------------------------------------------------ helpers

    def start_worker(self, payload: dict[str, Any]) -> Role:
        """A worker for PAYLOAD (as the launcher wrote it), from a file of its own: the
        worker path deletes its payload file, as upstream's does."""
        self.workers += 1
        path = self.scratch / f"payload-{self.workers}.json"
        path.write_text(json.dumps(payload), encoding="utf-8")
        return Role(Path(payload["profile_home"]), "worker", str(path), str(self.scratch))

    def adopt(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Spawn a worker, let it adopt its hand-off at once, return what it saw."""
        worker = self.start_worker(payload)
        try:
            worker.read(time.monotonic() + ROLE_TIMEOUT)
            worker.send("go")
            return worker.read(time.monotonic() + ROLE_TIMEOUT)
        finally:
            worker.close()

    # ------------------------------------------------------------ the steps

    def happy_path(self, handoff: dict[str, Any]) -> tuple[str, str]:
        execution_id = handoff["id"]
        seen = self.adopt(handoff["payload"])
        self.latency["happy_path"] = seen["seconds"]
        if seen["outcome"] != "adopted":
            return "fail", f"worker did not adopt a fresh hand-off: {_said(seen)}"
        problem = _job_start_problem(seen, execution_id)
        if problem:
            return "fail", problem
        took = f"adopted in {seen['seconds']:.2f} s via {seen['path']}"
        return "pass", f"{took}; row running and ack written when the job started"

    def compare_and_set(self, handoff: dict[str, Any]) -> tuple[str, str]:
        seen = self.adopt(handoff["payload"])
        if seen["outcome"] != "refused":
            return "fail", f"second adoption of the same row was not refused: {_said(seen)}"
        if seen["calls"] > 1:
            return "fail", f"a refusal was retried ({seen['calls']} adoption calls)"
        if seen["seconds"] > AT_ONCE:
            return "fail", f"refusal took {seen['seconds']:.2f} s (expected at once)"
        return "pass", f"refused in {seen['seconds']:.2f} s after {max(seen['calls'], 1)} call"

    def lock_stall(self, handoff: dict[str, Any], hold: float) -> tuple[str, str]:
        """The worker adopts during a stall; judged against the gateway's own deadline."""
        execution_id, wait = handoff["id"], self.facts["gateway_wait_seconds"]
        deadline = handoff["gateway_deadline"]
        spawned = time.monotonic()
        worker = self.start_worker(handoff["payload"])
        holder = Role(self.ledger_home, "holder", str(ledger_file(self.ledger_home)), repr(hold))
        try:
            worker.read(spawned + ROLE_TIMEOUT)
            locked = holder.read(spawned + ROLE_TIMEOUT)["locked"]
            worker.send("go")
            seen = worker.read(deadline + ROLE_TIMEOUT)
            released = holder.read(locked + hold + ROLE_TIMEOUT)["released"]
        finally:
            worker.close()
            holder.close()
        self.latency["lock_stall"] = seen["seconds"]
        if not locked <= seen["start"] <= released:
            raise RoleError("adoption did not start while the write lock was held")
        if seen["outcome"] == "adopted" and seen["end"] < released - 0.05:
            raise RoleError("adoption went through a held write lock: the stall was not staged")
        budget = f"{hold:.1f} s stall, the gateway waits {wait:g} s"
        if not isinstance(handoff["payload"].get("adoption_deadline"), int | float):
            budget += "; the gateway's payload carries no adoption_deadline"
        if seen["outcome"] != "adopted":
            return "fail", f"{_said(seen)} ({budget}): the hand-off is lost (#135487)"
        if seen["end"] > deadline:
            late = seen["end"] - deadline
            return "fail", f"adopted {late:.2f} s after the gateway's deadline ({budget})"
        problem = _job_start_problem(seen, execution_id)
        if problem:
            return "fail", problem
        calls = seen["calls"]
        return "pass", f"adopted in {seen['seconds']:.2f} s after {calls} call(s) ({budget})"

    def error_classes(self, template: dict[str, Any]) -> tuple[str, str]:
        """Two ledgers that fail for reasons other than a lock; each must raise at once.

        A corrupt file (sqlite3.DatabaseError) and a table that lacks `started_at` (an
        OperationalError that is not busy: "no such column"), which catches a retry that
        looks at the exception class instead of the SQLite result code. Each worker gets the
        launcher's payload (its deadline included), pointed at the broken ledger's home.
        """
        said = []
        for label, make in (("corrupt file", _corrupt_ledger), ("drifted table", _drifted_ledger)):
            home = self.home / label.replace(" ", "-")
            make(ledger_file(home))
            job = {**template["job"], "execution_id": f"patchkeeper-smoke-{home.name}"}
            seen = self.adopt({**template, "job": job, "profile_home": str(home)})
            if label == "drifted table" and seen["outcome"] == "refused" and not _errors(seen):
                said.append(f"{label}: not applicable (the install repaired the table)")
                continue
            if seen["outcome"] != "raised":
                return "fail", f"{label}: not reported as an error: {_said(seen)}"
            if seen["code"] in BUSY_CODES:
                return "fail", f"{label}: classified as busy: {seen['error']}"
            if seen["calls"] > 1 or seen["seconds"] > AT_ONCE:
                took = f"{seen['calls']} calls in {seen['seconds']:.2f} s"
                return "fail", f"{label}: a non-busy error was retried ({took}): {seen['error']}"
            said.append(f"{label}: raised at once ({seen['seconds']:.2f} s): {seen['error']}")
        return "pass", "; ".join(said)

def _corrupt_ledger(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a SQLite database\n" * 200)


def _drifted_ledger(path: Path) -> None:
    """An executions table without `started_at`: adoption's UPDATE cannot compile."""
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(str(path))
    try:
        conn.execute(
            "CREATE TABLE executions (id TEXT PRIMARY KEY, job_id TEXT NOT NULL, "
            "source TEXT NOT NULL, process_id TEXT NOT NULL, pid INTEGER NOT NULL, "
            "process_started_at INTEGER, status TEXT NOT NULL, claimed_at TEXT NOT NULL, "
            "finished_at TEXT, error TEXT)"
        )
        conn.commit()
    finally:
        conn.close()


def _errors(seen: dict[str, Any]) -> list[int]:
    """The SQLite result codes adoption calls raised inside the worker path."""
    return sorted({code for code in seen["call_codes"] if code is not None})


def _said(seen: dict[str, Any]) -> str:
    if seen["outcome"] == "raised":
        return f"{seen['error']} after {seen['seconds']:.2f} s, {seen['calls']} call(s)"
    said = f"{seen['outcome']} after {seen['seconds']:.2f} s"
    codes = _errors(seen)
    if codes:  # the worker path swallowed an error: name it
        said += f" (adoption raised SQLite error code {', '.join(map(str, codes))} inside)"
    return said


def _job_start_problem(seen: dict[str, Any], execution_id: str) -> str | None:
    job = seen.get("job")
    if not job:
        return "the worker adopted but its job never started"
    row = job["row"] or {}
    if row.get("status") != "running" or not row.get("started_at"):
        return f"when the job started the row was {row or 'missing'} (expected running)"
    ack = job["ack"]
    if not isinstance(ack, dict) or ack.get("execution_id") != execution_id:
        return f"no ack for this execution when the job started (ack: {ack})"
    return None


# ================================================================ verdicts


def step(name: str, action: Callable[[], tuple[str, str]]) -> dict[str, Any]:
    progress(f"{name} ...")
    started = time.monotonic()
    try:
        verdict, detail = action()
    except RoleError as exc:
        verdict, detail = "error", f"could not check: {exc}"
    seconds = round(time.monotonic() - started, 3)
    progress(f"{name}: {verdict} ({seconds:.2f} s)")
    return {"name": name, "verdict": verdict, "detail": detail, "seconds": seconds}


def overall(steps: list[dict[str, Any]]) -> str:
    """A step that failed wins over one that could not check: a real failure is never
    reported as "could not check"."""
    verdicts = {s["verdict"] for s in steps}
    return "fail" if "fail" in verdicts else "error" if "error" in verdicts else "pass"


def budget_steps(facts: dict[str, Any]) -> list[dict[str, Any]]:
    """The chain: the gateway passes its deadline and waits for as long as it gives the
    worker, the worker retries within it, and the retry leaves room for two busy timeouts.
    Sources name where each figure was read, measured or derived."""
    grace, busy = facts["grace_seconds"], facts["busy_timeout_seconds"]
    budget, retries = facts["retry_budget_seconds"], facts["worker_retries"]
    passes, wait = facts["gateway_passes_deadline"], facts["gateway_wait_seconds"]
    steps = [
        {
            "name": "gateway passes its deadline",
            "verdict": "pass" if passes else "fail",
            "detail": "the launcher writes adoption_deadline into the worker payload"
            if passes
            else "the launcher writes no adoption_deadline: the worker cannot know when the "
            "gateway stops waiting",
        },
    ]
    if passes:
        horizon = facts["deadline_horizon_seconds"]
        steps.append({
            "name": "gateway waits for the whole retry",
            # 0.1 s: both figures are rounded to a tenth
            "verdict": "pass" if wait + 0.1 >= horizon else "fail",
            "detail": f"the gateway waits {wait:g} s for the ack ({facts['gateway_wait_source']}"
            f"); the deadline it gives the worker is {horizon:g} s after the spawn"
            + ("" if wait + 0.1 >= horizon else ": a retry past the wait adopts a hand-off "
               "nobody waits for"),
        })
    steps.append({
        "name": "retry budget >= 2 x busy timeout",
        "verdict": "pass" if retries and budget >= 2 * busy else "fail",
        "detail": f"{budget:g} s ({facts['retry_budget_source']}) vs {busy:g} s busy timeout"
        + ("" if retries else "; the worker adopts once, no retry"),
    })
    if retries:
        margin = facts["stop_margin_seconds"]
        steps.append({
            "name": "last attempt ends before the deadline",
            "verdict": "pass" if margin >= busy else "fail",
            "detail": f"stop margin {margin:g} s ({facts['stop_margin_source']}) >= "
            f"{busy:g} s busy timeout; grace {grace:g} s ({facts['grace_source']})",
        })
    return steps


def probe(home: Path) -> dict[str, Any]:
    """What doctor runs: the launcher (once to measure its wait, once to hand off) and the
    worker's path on that hand-off, then the chain judged from the figures (no stall)."""
    check = Check(home)
    try:
        setup = call_role(check.ledger_home, "gateway", "1")
    except RoleError as exc:
        step_ = {"name": "run the launcher", "verdict": "error", "detail": str(exc)}
        return {"check": CHECK, "verdict": "error", "steps": [step_], "detail": str(exc)}
    check.facts = setup["facts"]
    steps = [step("run the worker path", lambda: check.happy_path(setup["handoffs"][0]))]
    steps += budget_steps(check.facts)
    return {"check": CHECK, "verdict": overall(steps), "steps": steps, **check.facts}


def full_run(home: Path) -> dict[str, Any]:
    check = Check(home)
    progress("setup: a gateway creates two executions and fences them for hand-off")
    try:
        setup = call_role(check.ledger_home, "gateway", "2")
    except RoleError as exc:
        failed = {"name": "setup", "verdict": "error", "detail": str(exc), "seconds": 0.0}
        return {"check": CHECK, "verdict": "error", "steps": [failed], "detail": str(exc)}
    check.facts = setup["facts"]
    first, stalled = setup["handoffs"]
    busy, wait = check.facts["busy_timeout_seconds"], check.facts["gateway_wait_seconds"]
    hold = busy + STALL_MARGIN
    steps = [
        step("1 happy path", lambda: check.happy_path(first)),
        step("2 compare-and-set", lambda: check.compare_and_set(first)),
    ]
    if hold >= wait:
        detail = (
            f"the gateway waits {wait:g} s for the ack: a write lock held past the {busy:g} s "
            f"busy timeout ({hold:g} s) loses the hand-off whatever the worker does"
        )
        if wait < check.facts["grace_seconds"]:  # a fixed wait, not the ledger's grace
            detail += (
                f"; the launcher's fixed {wait:g} s wait is shorter than the ledger's "
                f"{check.facts['grace_seconds']:g} s grace (Hermes before upstream PR #110192): "
                "no worker fix fits in it, update Hermes to 0.21.3 first"
            )
        steps.append({"name": "3 lock stall", "verdict": "fail", "detail": detail})
    else:
        steps.append(step("3 lock stall", lambda: check.lock_stall(stalled, hold)))
    steps.append(step("4 error classification", lambda: check.error_classes(first["payload"])))
    latency = {f"latency_{k}_seconds": round(v, 3) for k, v in check.latency.items()}
    failing = [f"{s['name']}: {s['detail']}" for s in steps if s["verdict"] != "pass"]
    return {
        "check": CHECK,
        "verdict": overall(steps),
        "steps": steps,
        **({"detail": "; ".join(failing)} if failing else {}),
        "python": sys.version.split()[0],
        "hold_seconds": hold,
        **latency,
        **check.facts,
    }


def main(argv: list[str]) -> int:
    if argv[:1] == ["--role"]:
        role, args = argv[1], argv[2:]
        if role == "gateway":
            role_gateway(int(args[0]))
        elif role == "worker":
            role_worker(Path(args[0]), Path(args[1]))
        elif role == "holder":
            role_holder(Path(args[0]), float(args[1]))
        return 0
    home = Path(os.environ.get("HERMES_HOME") or "")
    if not os.environ.get("HERMES_HOME") or not home.is_dir():
        emit({"check": CHECK, "verdict": "error", "steps": [], "detail": "HERMES_HOME not set"})
        return 1
    document = probe(home) if argv[:1] == ["--probe"] else full_run(home)
    emit(document)
    return 0 if document["verdict"] == "pass" else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
