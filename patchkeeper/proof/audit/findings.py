"""What the audit finds: the checks it knows, one type per kind of finding, and the result.

The reports (text and JSON) read these types; nothing here reads a file or judges a row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo
from enum import StrEnum
from pathlib import Path

from patchkeeper.model import exitcodes
from patchkeeper.proof.audit.records import LossKind


class Check(StrEnum):
    NEVER_STARTED = "never_started"
    GREEN_BUT_FAILING = "green_but_failing"
    STUCK = "stuck"
    PER_DAY = "per_day"
    DELIVERED_BUT_LOST = "delivered_but_booked_lost"


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
    """One day of the ledger: executions, failures and the runs that never started."""

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
    """What `audit` found in the cron ledger and the jobs file."""

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
