"""The audit itself: the home to audit, what of it could be read, which checks can run.

Every input that could not be read, and every check that cannot run on this ledger's columns,
is put in `unchecked` with its reason; the checks that can run, run.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path

from patchkeeper.model.errors import UserError
from patchkeeper.proof.audit.checks import (
    count_per_day,
    find_delivered_but_lost,
    find_green_but_failing,
    find_never_started,
    find_stuck,
)
from patchkeeper.proof.audit.findings import AuditResult, Check, Unchecked
from patchkeeper.proof.audit.jobs_file import JOBS_PATH, JobsUnreadable, load_jobs
from patchkeeper.proof.audit.ledger_file import (
    DELIVERIES_PATH,
    LEDGER_PATH,
    LedgerUnreadable,
    read_deliveries,
    read_ledger,
)
from patchkeeper.proof.audit.records import Job, Ledger, booked_ownership_lost

DEFAULT_STUCK_AFTER = timedelta(hours=2)
DEFAULT_DAYS = 14
# Short on purpose: an audit answers "could not check: locked" rather than queue behind a writer.
DEFAULT_BUSY_TIMEOUT = 2.0

# The columns every check reads; each check adds the ones it needs besides (_NEEDS).
_BASE_COLUMNS = frozenset({"id", "job_id", "status", "claimed_at"})
_NEEDS: dict[Check, frozenset[str]] = {
    Check.NEVER_STARTED: _BASE_COLUMNS | {"started_at", "error"},
    Check.GREEN_BUT_FAILING: _BASE_COLUMNS | {"started_at"},
    Check.STUCK: _BASE_COLUMNS,
    Check.PER_DAY: _BASE_COLUMNS | {"started_at"},
    Check.DELIVERED_BUT_LOST: _BASE_COLUMNS | {"error"},
}


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
