"""Read-only reconciliation of a Hermes cron ledger with the jobs the dashboard shows.

Five checks, one report: executions that never started (and which of those are the
"database is locked" loss of upstream issue #135487), jobs whose dashboard fields say healthy
while their latest execution failed ("green but failing"), claims stuck in claimed/running,
counts per day, and executions booked failed as a lost fire claim whose delivery succeeded
(seed 000, upstream #100401/#108341/#105861: the heartbeat waited on the fence its own run
held). Nothing here writes: the ledger and the delivery queue are opened with `mode=ro`, the
jobs file is only read, and no upstream code is imported (loading upstream's jobs may rewrite
jobs.json, and opening its ledger runs schema changes).

A check that could not run is reported in `unchecked` with its reason. It is never "clean": a
ledger we could not read says nothing about lost jobs.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from enum import StrEnum
from pathlib import Path
from typing import Any

from patchkeeper.install.instants import parse_instant
from patchkeeper.model import exitcodes
from patchkeeper.model.errors import UserError

LEDGER_PATH = Path("cron") / "executions.db"
JOBS_PATH = Path("cron") / "jobs.json"
# The restart-safe workers' delivery queue (cron/delivery_queue.py): one row per execution id.
DELIVERIES_PATH = Path("cron") / "deliveries.db"
DEFAULT_STUCK_AFTER = timedelta(hours=2)
DEFAULT_DAYS = 14
# Short on purpose: an audit answers "could not check: locked" rather than queue behind a writer.
DEFAULT_BUSY_TIMEOUT = 2.0

LOCKED_TEXT = "database is locked"
# Refusals before start that are the scheduler working as designed, not a loss.
REFUSAL_TEXTS = ("dispatch claim rejected", "fire claim lost")
IN_FLIGHT = ("claimed", "running")
# What the scheduler books when a renewal of the run's fire claim failed: "Fire claim ownership
# lost; stale result was discarded." when the claim is another's, and its
# `_OWNERSHIP_LOST_INTERRUPTED` text, which reads like a shutdown, when the claim is still the
# run's own (the case of the fence bug, #105861, #108862).
OWNERSHIP_LOST_TEXTS = ("fire claim ownership lost", "interrupted by shutdown before terminal")
DELIVERED = "delivered"
# Primary SQLite result codes that mean "someone else holds the lock" (not "broken").
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6

# Columns the audit reads when they exist; every check names the ones it cannot do without.
_WANTED_COLUMNS = (
    "id", "job_id", "status", "claimed_at", "started_at", "error", "pid", "delivery_outcome",
)  # fmt: skip
_BASE_COLUMNS = frozenset({"id", "job_id", "status", "claimed_at"})


class Check(StrEnum):
    NEVER_STARTED = "never_started"
    GREEN_BUT_FAILING = "green_but_failing"
    STUCK = "stuck"
    PER_DAY = "per_day"
    DELIVERED_BUT_LOST = "delivered_but_booked_lost"


_NEEDS: dict[Check, frozenset[str]] = {
    Check.NEVER_STARTED: _BASE_COLUMNS | {"started_at", "error"},
    Check.GREEN_BUT_FAILING: _BASE_COLUMNS | {"started_at"},
    Check.STUCK: _BASE_COLUMNS,
    Check.PER_DAY: _BASE_COLUMNS | {"started_at"},
    Check.DELIVERED_BUT_LOST: _BASE_COLUMNS | {"error"},
}


class LossKind(StrEnum):
    """Why an execution never started."""

    LOCKED = "locked"  # the #135487 loss: the worker could not adopt its claim in time
    OTHER = "other"  # anything else: unexplained, so an anomaly
    REFUSAL = "refusal"  # a designed refusal (claim rejected / lost): not an anomaly


# --- result model ---------------------------------------------------------------------------


@dataclass(frozen=True)
class NeverStartedGroup:
    """Never-started executions of one job with one status and one kind of cause."""

    job_id: str
    job_name: str | None
    status: str
    kind: LossKind
    count: int
    first: datetime
    last: datetime
    sample_error: str | None

    @property
    def is_anomaly(self) -> bool:
        return self.kind is not LossKind.REFUSAL


@dataclass(frozen=True)
class GreenButFailing:
    """A job the dashboard shows healthy whose latest ledger execution failed or never started."""

    job_id: str
    job_name: str | None
    last_status: str
    failure_streak: int | None  # None: the job has no failure_streak field
    execution_id: str
    execution_status: str
    claimed_at: datetime
    started: bool
    error: str | None


@dataclass(frozen=True)
class StuckClaim:
    """An execution in claimed/running longer than the threshold. Its owner may still be alive:
    the age is all the ledger proves (a slow owner is not a lost one)."""

    execution_id: str
    job_id: str
    job_name: str | None
    status: str
    since: datetime
    age: timedelta
    pid: int | None


@dataclass(frozen=True)
class DeliveredButLost:
    """An execution booked failed as a lost fire claim whose message was delivered: a run that
    did its work, recorded as a takeover (the heartbeat waited on its own fence)."""

    execution_id: str
    job_id: str
    job_name: str | None
    claimed_at: datetime
    error: str
    evidence: tuple[str, ...]  # where the delivery is recorded as delivered


@dataclass(frozen=True)
class DayCount:
    day: date
    executions: int
    failed: int
    never_started: int
    locked: int  # never started because the ledger was locked (the #135487 loss)


@dataclass(frozen=True)
class Unchecked:
    """What could not be checked, and why (`check` is None when it concerns every check)."""

    check: Check | None
    reason: str


@dataclass(frozen=True)
class AuditResult:
    home: Path
    ledger: Path
    jobs_file: Path
    now: datetime
    stuck_after: timedelta
    days: int
    day_zone: tzinfo
    executions_read: int | None  # None: the ledger could not be read
    jobs_read: int | None  # None: no jobs file, or one that could not be read
    checked: tuple[Check, ...]
    never_started: tuple[NeverStartedGroup, ...]
    green_but_failing: tuple[GreenButFailing, ...]
    stuck: tuple[StuckClaim, ...]
    per_day: tuple[DayCount, ...]
    unchecked: tuple[Unchecked, ...]
    jobs_unreadable: bool = False  # the jobs file is there but could not be read (torn?)
    delivered_but_lost: tuple[DeliveredButLost, ...] = ()
    ownership_lost: int = 0  # executions booked failed as a lost fire claim
    deliveries: Path | None = None  # the delivery queue that was read; None: none there

    @property
    def anomalies(self) -> int:
        """Count of findings a person should look at (refusals before start are not)."""
        lost = sum(group.count for group in self.never_started if group.is_anomaly)
        found = len(self.green_but_failing) + len(self.stuck) + len(self.delivered_but_lost)
        return lost + found

    @property
    def exit_code(self) -> int:
        """ATTENTION when something is wrong or could not be checked; OK only when all is clean."""
        return exitcodes.ATTENTION if self.anomalies or self.unchecked else exitcodes.OK


# --- inputs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    id: str
    name: str | None
    last_status: str | None
    failure_streak: object

    @property
    def dashboard_healthy(self) -> bool:
        """What a dashboard shows green: last run ok and no failure streak recorded."""
        return self.last_status == "ok" and self.failure_streak in (None, 0)


@dataclass(frozen=True)
class Execution:
    id: str
    job_id: str
    status: str
    claimed_at: datetime
    started: bool
    started_at: datetime | None  # None when absent, or present but not a readable time
    error: str | None
    pid: int | None
    delivery_outcome: str | None = None  # the ledger's own column, in versions that have it

    @property
    def never_started(self) -> bool:
        """No start recorded and no longer just claimed (a young claim is simply in flight)."""
        return not self.started and self.status != "claimed"

    @property
    def loss(self) -> LossKind | None:
        """Why it never started; None when it started (or is still just claimed)."""
        return classify_loss(self.error) if self.never_started else None


@dataclass(frozen=True)
class Ledger:
    columns: frozenset[str]
    rows: int
    executions: tuple[Execution, ...]
    bad_stamps: tuple[str, ...]  # "id: value" of rows whose claimed_at is not an instant


class LedgerUnreadable(Exception):
    """The ledger could not be read at all; the message says why, in words for the report."""


def resolve_home(home: Path, profile: str | None) -> Path:
    """The Hermes home to audit (a profile lives under `<home>/profiles/<name>`)."""
    home = home.expanduser()
    if not profile:
        return home
    if "/" in profile or "\\" in profile or profile in (".", ".."):
        raise UserError(f"{profile!r}: a profile is a name, not a path")
    target = home / "profiles" / profile
    if home.is_dir() and not target.is_dir():
        raise UserError(f"{target}: profile {profile!r} does not exist")
    return target


class JobsUnreadable(Exception):
    """The jobs file exists but cannot be used (torn, not JSON, not a jobs shape, unreadable).

    Hermes writes jobs.json, not the operator: the audit reports it as "could not check" and
    goes on with the checks that need only the ledger.
    """


def load_jobs(path: Path) -> tuple[dict[str, Job], list[str]] | None:
    """Jobs by id plus complaints about entries that cannot be reconciled; None if no file.

    Accepts the current `{"jobs": [...]}` object, an older bare list, or an id-keyed map, with or
    without a leading UTF-8 BOM. A file that cannot be read, is not JSON (a torn write) or is not
    one of those shapes raises JobsUnreadable naming the file.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise JobsUnreadable(f"{path}: cannot read jobs file ({exc.strerror or exc})") from exc
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise JobsUnreadable(f"{path}: jobs file is not UTF-8 text") from exc
    except json.JSONDecodeError as exc:
        raise JobsUnreadable(
            f"{path}: jobs file is not JSON ({exc.msg}, line {exc.lineno}; a torn write?)"
        ) from exc
    return _jobs_from_entries(_job_entries(path, data))


def _job_entries(path: Path, data: Any) -> list[tuple[str | None, Any]]:
    """(key, entry) pairs; the key is the id an id-keyed map gives its entries."""
    if isinstance(data, dict) and isinstance(data.get("jobs"), list):
        return [(None, entry) for entry in data["jobs"]]
    if isinstance(data, list):
        return [(None, entry) for entry in data]
    if isinstance(data, dict) and all(isinstance(entry, dict) for entry in data.values()):
        return [(str(key), entry) for key, entry in data.items()]
    raise JobsUnreadable(
        f'{path}: not a jobs file (expected {{"jobs": [...]}}, a list or an id map)'
    )


def _jobs_from_entries(entries: list[tuple[str | None, Any]]) -> tuple[dict[str, Job], list[str]]:
    jobs: dict[str, Job] = {}
    complaints: list[str] = []
    for number, (key, entry) in enumerate(entries, start=1):
        job_id = entry.get("id", key) if isinstance(entry, dict) else None
        if not isinstance(job_id, str | int) or isinstance(job_id, bool) or job_id == "":
            complaints.append(f"jobs.json entry #{number} has no id; it was not reconciled")
            continue
        jobs[str(job_id)] = Job(
            id=str(job_id),
            name=_text_or_none(entry.get("name")),
            last_status=_text_or_none(entry.get("last_status")),
            failure_streak=entry.get("failure_streak"),
        )
    return jobs, complaints


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def read_ledger(path: Path, busy_timeout: float) -> Ledger | None:
    """Every execution row, read in one read-only snapshot; None when the table does not exist.

    Raises LedgerUnreadable when the file is missing, locked past `busy_timeout`, or not a
    database. "Locked" is decided by SQLite's result code, never by the message text.
    """
    if not path.is_file():
        raise LedgerUnreadable(f"no ledger at {path}")
    with _snapshot(path, busy_timeout, "ledger") as conn:
        columns = _columns(conn, "executions")
        if not columns:
            return None
        present = [name for name in _WANTED_COLUMNS if name in columns]
        rows = conn.execute(f"SELECT {', '.join(present)} FROM executions").fetchall()
    return _ledger_from_rows(columns, [dict(zip(present, row, strict=True)) for row in rows])


def read_deliveries(path: Path, busy_timeout: float) -> dict[str, str] | None:
    """Delivery status by execution id from the delivery queue (`deliveries`, and the
    `delivery_tombstones` that keep the outcome of pruned rows); None when there is no queue
    file (only restart-safe workers create it). Raises LedgerUnreadable as read_ledger does."""
    if not path.is_file():
        return None
    statuses: dict[str, str] = {}
    with _snapshot(path, busy_timeout, "delivery queue") as conn:
        for table, column in (("delivery_tombstones", "terminal_status"), ("deliveries", "status")):
            if {"execution_id", column} <= _columns(conn, table):  # a live row wins
                rows = conn.execute(f"SELECT execution_id, {column} FROM {table}")
                statuses.update((str(key), str(status)) for key, status in rows)
    return statuses


@contextmanager
def _snapshot(path: Path, busy_timeout: float, what: str) -> Iterator[sqlite3.Connection]:
    """One read-only snapshot of the SQLite file PATH (WHAT names it in errors). "Locked" is
    decided by SQLite's result code, never by the message text."""
    try:
        conn = sqlite3.connect(
            f"file:{path}?mode=ro", uri=True, timeout=busy_timeout, isolation_level=None
        )
    except sqlite3.Error as exc:
        raise LedgerUnreadable(f"cannot open {what} {path}: {exc}") from exc
    try:
        conn.execute("BEGIN")  # one snapshot for the column probes and the rows
        yield conn
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorcode & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED):
            raise LedgerUnreadable(
                f"database is locked: a writer held {path} for more than {busy_timeout:g} s"
            ) from exc
        raise LedgerUnreadable(f"cannot read {what} {path}: {exc}") from exc
    except sqlite3.DatabaseError as exc:
        raise LedgerUnreadable(f"cannot read {what} {path}: {exc}") from exc
    finally:
        conn.close()


def _columns(conn: sqlite3.Connection, table: str) -> frozenset[str]:
    """TABLE's columns; empty when there is no such table."""
    return frozenset(row[1] for row in conn.execute(f"PRAGMA table_info({table})"))


def _ledger_from_rows(columns: frozenset[str], rows: list[dict[str, Any]]) -> Ledger:
    if "claimed_at" not in columns:  # every check needs it; each one says so on its own
        return Ledger(columns, len(rows), (), ())
    executions: list[Execution] = []
    bad: list[str] = []
    for row in rows:
        claimed_at = parse_instant(row.get("claimed_at"))
        if claimed_at is None:
            bad.append(f"{row.get('id')}: {row.get('claimed_at')!r}")
            continue
        started_raw = row.get("started_at")
        pid = row.get("pid")
        executions.append(
            Execution(
                id=str(row.get("id")),
                job_id=str(row.get("job_id")),
                status=str(row.get("status")),
                claimed_at=claimed_at,
                started=started_raw not in (None, ""),
                started_at=parse_instant(started_raw),
                error=_text_or_none(row.get("error")),
                pid=pid if isinstance(pid, int) else None,
                delivery_outcome=_text_or_none(row.get("delivery_outcome")),
            )
        )
    return Ledger(columns, len(rows), tuple(executions), tuple(bad))


# --- checks ---------------------------------------------------------------------------------


def classify_loss(error: str | None) -> LossKind:
    """Sort a never-started execution by its error text (the ledger keeps only the text)."""
    text = (error or "").casefold()
    if LOCKED_TEXT in text:
        return LossKind.LOCKED
    if any(refusal in text for refusal in REFUSAL_TEXTS):
        return LossKind.REFUSAL
    return LossKind.OTHER


def find_never_started(
    executions: Iterable[Execution], jobs: Mapping[str, Job]
) -> list[NeverStartedGroup]:
    groups: dict[tuple[str, str, LossKind], list[Execution]] = defaultdict(list)
    for execution in executions:
        if execution.loss is not None:
            groups[(execution.job_id, execution.status, execution.loss)].append(execution)
    found = [_group(key, members, jobs) for key, members in groups.items()]
    return sorted(found, key=lambda group: (group.kind, -group.count, group.job_id, group.status))


def _group(
    key: tuple[str, str, LossKind], members: list[Execution], jobs: Mapping[str, Job]
) -> NeverStartedGroup:
    job_id, status, kind = key
    members.sort(key=lambda execution: execution.claimed_at)
    return NeverStartedGroup(
        job_id=job_id,
        job_name=_job_name(jobs, job_id),
        status=status,
        kind=kind,
        count=len(members),
        first=members[0].claimed_at,
        last=members[-1].claimed_at,
        sample_error=members[-1].error,
    )


def _job_name(jobs: Mapping[str, Job], job_id: str) -> str | None:
    job = jobs.get(job_id)
    return job.name if job else None


def latest_by_job(executions: Iterable[Execution]) -> dict[str, Execution]:
    """The newest execution of each job by claimed instant (not by text: offsets may differ)."""
    latest: dict[str, Execution] = {}
    for execution in executions:
        current = latest.get(execution.job_id)
        if current is None or (execution.claimed_at, execution.id) > (
            current.claimed_at,
            current.id,
        ):
            latest[execution.job_id] = execution
    return latest


def find_green_but_failing(
    executions: Iterable[Execution], jobs: Mapping[str, Job]
) -> list[GreenButFailing]:
    """Healthy-looking jobs whose latest attempt failed or never started.

    Designed refusals are not attempts of the job (another owner had the occurrence), so they
    neither count as the latest execution nor hide a real failure before them.
    """
    attempts = (execution for execution in executions if execution.loss is not LossKind.REFUSAL)
    found: list[GreenButFailing] = []
    for job_id, execution in sorted(latest_by_job(attempts).items()):
        job = jobs.get(job_id)
        failing = execution.status == "failed" or execution.never_started
        if job is None or not job.dashboard_healthy or not failing:
            continue
        found.append(
            GreenButFailing(
                job_id=job_id,
                job_name=job.name,
                last_status=job.last_status or "",
                failure_streak=None if job.failure_streak is None else 0,
                execution_id=execution.id,
                execution_status=execution.status,
                claimed_at=execution.claimed_at,
                started=execution.started,
                error=execution.error,
            )
        )
    return found


def find_stuck(
    executions: Iterable[Execution],
    jobs: Mapping[str, Job],
    now: datetime,
    stuck_after: timedelta,
) -> list[StuckClaim]:
    """Claims in claimed/running whose age (since start, else since claim) exceeds stuck_after."""
    found: list[StuckClaim] = []
    for execution in executions:
        if execution.status not in IN_FLIGHT:
            continue
        since = execution.started_at or execution.claimed_at
        age = now - since
        if age > stuck_after:
            found.append(
                StuckClaim(
                    execution_id=execution.id,
                    job_id=execution.job_id,
                    job_name=_job_name(jobs, execution.job_id),
                    status=execution.status,
                    since=since,
                    age=age,
                    pid=execution.pid,
                )
            )
    return sorted(found, key=lambda claim: claim.since)


def booked_ownership_lost(execution: Execution) -> bool:
    """Booked failed because the scheduler believed another owner took the claim."""
    error = (execution.error or "").casefold()
    return execution.status == "failed" and any(text in error for text in OWNERSHIP_LOST_TEXTS)


def find_delivered_but_lost(
    executions: Iterable[Execution],
    deliveries: Mapping[str, str] | None,
    jobs: Mapping[str, Job],
) -> list[DeliveredButLost]:
    """Executions booked failed as a lost fire claim whose delivery is recorded as delivered:
    in the ledger's own delivery_outcome, or in the delivery queue under the same execution id."""
    found: list[DeliveredButLost] = []
    for execution in executions:
        if not booked_ownership_lost(execution):
            continue
        evidence = []
        if (execution.delivery_outcome or "").casefold() == DELIVERED:
            evidence.append("executions.delivery_outcome is delivered")
        if deliveries is not None and deliveries.get(execution.id) == DELIVERED:
            evidence.append(f"{DELIVERIES_PATH.name} says delivered")
        if evidence:
            found.append(
                DeliveredButLost(
                    execution_id=execution.id,
                    job_id=execution.job_id,
                    job_name=_job_name(jobs, execution.job_id),
                    claimed_at=execution.claimed_at,
                    error=execution.error or "",
                    evidence=tuple(evidence),
                )
            )
    return sorted(found, key=lambda item: (item.claimed_at, item.execution_id))


def count_per_day(
    executions: Iterable[Execution], now: datetime, days: int, zone: tzinfo
) -> list[DayCount]:
    """Counts for the last `days` days (today included) in `zone`, oldest first."""
    today = now.astimezone(zone).date()
    window = [today - timedelta(days=offset) for offset in range(days - 1, -1, -1)]
    totals = {day: [0, 0, 0, 0] for day in window}
    for execution in executions:
        counts = totals.get(execution.claimed_at.astimezone(zone).date())
        if counts is None:
            continue
        counts[0] += 1
        counts[1] += execution.status == "failed"
        counts[2] += execution.never_started
        counts[3] += execution.loss is LossKind.LOCKED
    return [DayCount(day, *totals[day]) for day in window]


# --- the audit ------------------------------------------------------------------------------


def audit(
    home: Path,
    *,
    now: datetime | None = None,
    stuck_after: timedelta = DEFAULT_STUCK_AFTER,
    days: int = DEFAULT_DAYS,
    day_zone: tzinfo | None = None,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
) -> AuditResult:
    """Audit the Hermes home HOME (already resolved, profile included). Never writes anything.

    `day_zone` is the zone the per-day table uses (default: this machine's local zone).
    """
    if not home.is_dir():
        raise UserError(f"{home}: Hermes home does not exist")
    now = now or datetime.now(UTC)
    zone = day_zone or now.astimezone().tzinfo or UTC
    ledger_path, jobs_path = home / LEDGER_PATH, home / JOBS_PATH
    unchecked: list[Unchecked] = []
    jobs, jobs_unreadable = _load_jobs_or_report(jobs_path, unchecked)
    ledger = _read_ledger_or_report(ledger_path, busy_timeout, unchecked)
    runnable = _runnable_checks(ledger, jobs is not None, unchecked)
    executions = ledger.executions if ledger else ()
    known_jobs = jobs or {}
    deliveries_path = home / DELIVERIES_PATH
    deliveries = None
    if Check.DELIVERED_BUT_LOST in runnable:
        deliveries = _read_deliveries_or_report(deliveries_path, busy_timeout, unchecked)
        if not _delivery_recorded_somewhere(ledger, deliveries, deliveries_path, unchecked):
            runnable.remove(Check.DELIVERED_BUT_LOST)
    delivered_check = Check.DELIVERED_BUT_LOST in runnable
    return AuditResult(
        home=home,
        ledger=ledger_path,
        jobs_file=jobs_path,
        now=now,
        stuck_after=stuck_after,
        days=days,
        day_zone=zone,
        executions_read=ledger.rows if ledger else None,
        jobs_read=None if jobs is None else len(jobs),
        checked=tuple(runnable),
        never_started=tuple(
            find_never_started(executions, known_jobs) if Check.NEVER_STARTED in runnable else ()
        ),
        green_but_failing=tuple(
            find_green_but_failing(executions, known_jobs)
            if Check.GREEN_BUT_FAILING in runnable
            else ()
        ),
        stuck=tuple(
            find_stuck(executions, known_jobs, now, stuck_after) if Check.STUCK in runnable else ()
        ),
        per_day=tuple(
            count_per_day(executions, now, days, zone) if Check.PER_DAY in runnable else ()
        ),
        unchecked=tuple(unchecked),
        jobs_unreadable=jobs_unreadable,
        delivered_but_lost=tuple(
            find_delivered_but_lost(executions, deliveries, known_jobs) if delivered_check else ()
        ),
        ownership_lost=sum(map(booked_ownership_lost, executions)) if delivered_check else 0,
        deliveries=deliveries_path if deliveries is not None else None,
    )


def _load_jobs_or_report(
    path: Path, unchecked: list[Unchecked]
) -> tuple[dict[str, Job] | None, bool]:
    """The jobs (None when there are none to use), and whether the file was there but unreadable."""
    try:
        loaded = load_jobs(path)
    except JobsUnreadable as exc:
        reason = f"could not check the jobs file: {exc}"
        unchecked.append(Unchecked(Check.GREEN_BUT_FAILING, reason))
        return None, True
    if loaded is None:
        reason = f"no jobs file at {path}: cannot compare the dashboard with the ledger"
        unchecked.append(Unchecked(Check.GREEN_BUT_FAILING, reason))
        return None, False
    jobs, complaints = loaded
    unchecked.extend(Unchecked(Check.GREEN_BUT_FAILING, text) for text in complaints)
    return jobs, False


def _read_ledger_or_report(
    path: Path, busy_timeout: float, unchecked: list[Unchecked]
) -> Ledger | None:
    try:
        ledger = read_ledger(path, busy_timeout)
    except LedgerUnreadable as exc:
        unchecked.append(Unchecked(None, f"could not check the ledger: {exc}"))
        return None
    if ledger is None:
        unchecked.append(Unchecked(None, f"{path} has no executions table"))
    elif ledger.bad_stamps:
        sample = ", ".join(ledger.bad_stamps[:3])
        reason = (
            f"{len(ledger.bad_stamps)} execution(s) have a claimed_at that is not a "
            f"timezone-aware ISO time and were left out of every check ({sample})"
        )
        unchecked.append(Unchecked(None, reason))
    return ledger


def _read_deliveries_or_report(
    path: Path, busy_timeout: float, unchecked: list[Unchecked]
) -> dict[str, str] | None:
    try:
        return read_deliveries(path, busy_timeout)
    except LedgerUnreadable as exc:
        reason = f"could not check the delivery queue: {exc}"
        unchecked.append(Unchecked(Check.DELIVERED_BUT_LOST, reason))
        return None


def _delivery_recorded_somewhere(
    ledger: Ledger | None,
    deliveries: dict[str, str] | None,
    deliveries_path: Path,
    unchecked: list[Unchecked],
) -> bool:
    """Whether executions booked as a lost fire claim can be compared with a delivery record; with
    none of them there is nothing to compare, which is a clean result, not an unchecked one."""
    lost = sum(map(booked_ownership_lost, ledger.executions)) if ledger else 0
    if not lost or deliveries is not None or (ledger and "delivery_outcome" in ledger.columns):
        return True
    unchecked.append(
        Unchecked(
            Check.DELIVERED_BUT_LOST,
            f"{lost} execution(s) booked failed as a lost fire claim, and no "
            f"delivery record to compare them with (no {deliveries_path}, no delivery_outcome "
            "column)",
        )
    )
    return False


def _runnable_checks(
    ledger: Ledger | None, have_jobs: bool, unchecked: list[Unchecked]
) -> list[Check]:
    """The checks whose inputs exist; each one that cannot run is reported once."""
    if ledger is None:
        return []
    runnable: list[Check] = []
    for check in Check:
        missing = sorted(_NEEDS[check] - ledger.columns)
        if missing:
            reason = f"the executions table has no column {', '.join(missing)} (older schema?)"
            unchecked.append(Unchecked(check, reason))
        elif check is not Check.GREEN_BUT_FAILING or have_jobs:
            runnable.append(check)
    return runnable
