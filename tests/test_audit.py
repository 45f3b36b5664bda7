"""`patchkeeper audit` on real SQLite ledgers built like upstream's (see ledgers.py)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from ledgers import (
    BERLIN,
    COLUMNS,
    FIRE_LOST_ERROR,
    LOCKED_ERROR,
    NEW_YORK,
    NOW,
    ORIGINAL_COLUMNS,
    REFUSED_ERROR,
    create_ledger,
    execution,
    insert,
    job,
    write_jobs,
)

from patchkeeper.install.records.instants import parse_instant
from patchkeeper.model import exitcodes
from patchkeeper.model.errors import UserError
from patchkeeper.proof.audit.findings import Check
from patchkeeper.proof.audit.reconcile import audit
from patchkeeper.proof.audit.records import LossKind
from patchkeeper.report.audit import render_text, to_dict

REPO = Path(__file__).resolve().parents[1]
HOUR = timedelta(hours=1)


def run_audit(home: Path, **options: object):
    """The domain audit at a fixed NOW, with days counted in UTC."""
    return audit(home, now=NOW, day_zone=UTC, **options)


def run_cli(*args: str | Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real CLI in a child process (HERMES_HOME unset so only --home counts)."""
    env = {key: value for key, value in os.environ.items() if key != "HERMES_HOME"}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-m", "patchkeeper", "audit", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=timeout,
    )


def cli_json(*args: str | Path) -> tuple[int, dict]:
    done = run_cli(*args, "--json")
    return done.returncode, json.loads(done.stdout)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "hermes"
    path.mkdir()
    return path


def clean_home(home: Path, now: datetime = NOW) -> Path:
    """Two healthy jobs, each with completed executions over the last days; returns the ledger."""
    ledger = create_ledger(home)
    write_jobs(home, [job("a"), job("b")])
    for days_ago in range(3):
        claimed = now - timedelta(days=days_ago, hours=2)
        insert(
            ledger,
            execution("a", "completed", claimed, started_at=claimed + timedelta(seconds=2)),
            execution("b", "completed", claimed, started_at=claimed + timedelta(seconds=3)),
        )
    return ledger


def failing_job(job_id: str) -> dict:
    """A job the dashboard already shows as failing (so only the check under test fires)."""
    return job(job_id, last_status="error", failure_streak=2)


# --- one anomaly at a time ------------------------------------------------------------------


def test_clean_ledger_is_ok(home: Path) -> None:
    clean_home(home)
    result = run_audit(home)
    assert result.unchecked == ()
    assert set(result.checked) == set(Check)
    assert result.anomalies == 0
    assert result.exit_code == exitcodes.OK
    assert [day.executions for day in result.per_day[-3:]] == [2, 2, 2]


def test_locked_losses_are_grouped_per_job_and_status(home: Path) -> None:
    ledger = create_ledger(home)
    write_jobs(home, [failing_job("digest")])
    first, last = NOW - 30 * HOUR, NOW - 2 * HOUR
    insert(
        ledger,
        execution("digest", "failed", first, error=LOCKED_ERROR),
        execution("digest", "failed", NOW - 10 * HOUR, error=LOCKED_ERROR),
        execution("digest", "failed", last, error=LOCKED_ERROR),
        execution("digest", "completed", NOW - HOUR, started_at=NOW - HOUR),
    )
    result = run_audit(home)
    [group] = result.never_started
    assert (group.job_id, group.status, group.kind, group.count) == (
        "digest",
        "failed",
        LossKind.LOCKED,
        3,
    )
    assert (group.first, group.last) == (first, last)
    assert group.job_name == "job digest"
    assert result.green_but_failing == () and result.stuck == ()
    assert result.anomalies == 3
    assert result.exit_code == exitcodes.ATTENTION


def test_designed_refusals_are_reported_but_not_anomalies(home: Path) -> None:
    ledger = clean_home(home)
    insert(
        ledger,
        execution("a", "failed", NOW - 3 * HOUR, error=REFUSED_ERROR),
        execution("a", "failed", NOW - 2 * HOUR, error=REFUSED_ERROR),
        execution("b", "failed", NOW - 1 * HOUR, error=FIRE_LOST_ERROR),
    )
    result = run_audit(home)
    assert {(g.job_id, g.kind, g.count) for g in result.never_started} == {
        ("a", LossKind.REFUSAL, 2),
        ("b", LossKind.REFUSAL, 1),
    }
    # A refusal is not the job's latest attempt: the healthy dashboard is right.
    assert result.green_but_failing == ()
    assert result.exit_code == exitcodes.OK
    assert result.per_day[-1].never_started == 3


def test_unexplained_never_started_is_an_anomaly_per_status(home: Path) -> None:
    ledger = create_ledger(home)
    write_jobs(home, [failing_job("x")])
    insert(
        ledger,
        execution("x", "unknown", NOW - 5 * HOUR, error="Scheduler restarted"),
        execution("x", "failed", NOW - 4 * HOUR, error="Worker exited with status 1"),
        execution("x", "failed", NOW - 3 * HOUR, error=LOCKED_ERROR),
    )
    result = run_audit(home)
    assert {(g.status, g.kind, g.count) for g in result.never_started} == {
        ("unknown", LossKind.OTHER, 1),
        ("failed", LossKind.OTHER, 1),
        ("failed", LossKind.LOCKED, 1),
    }
    assert result.anomalies == 3


def test_young_claim_is_in_flight_not_never_started(home: Path) -> None:
    ledger = clean_home(home)
    insert(ledger, execution("a", "claimed", NOW - timedelta(seconds=20)))
    result = run_audit(home)
    assert result.never_started == () and result.stuck == ()
    assert result.green_but_failing == ()
    assert result.exit_code == exitcodes.OK


@pytest.mark.parametrize(
    ("latest", "started"),
    [
        (execution("a", "failed", NOW - HOUR, started_at=NOW - HOUR, error="boom"), True),
        (execution("a", "failed", NOW - HOUR, error=LOCKED_ERROR), False),
    ],
    ids=["failed-after-start", "locked-before-start"],
)
def test_green_but_failing(home: Path, latest: dict, started: bool) -> None:
    ledger = clean_home(home)
    insert(ledger, latest)
    result = run_audit(home)
    [item] = result.green_but_failing
    assert (item.job_id, item.execution_id, item.started) == ("a", latest["id"], started)
    assert (item.last_status, item.failure_streak) == ("ok", 0)
    assert result.exit_code == exitcodes.ATTENTION


def test_green_but_failing_without_failure_streak_field(home: Path) -> None:
    ledger = clean_home(home)
    write_jobs(home, [job("a", failure_streak=None), job("b", failure_streak=1)])
    insert(
        ledger,
        execution("a", "failed", NOW - HOUR, started_at=NOW - HOUR, error="boom"),
        execution("b", "failed", NOW - HOUR, started_at=NOW - HOUR, error="boom"),
    )
    [item] = run_audit(home).green_but_failing
    assert (item.job_id, item.failure_streak) == ("a", None)


def test_older_failure_under_a_newer_success_is_not_green_but_failing(home: Path) -> None:
    ledger = clean_home(home)
    insert(ledger, execution("a", "failed", NOW - 30 * HOUR, started_at=NOW - 30 * HOUR))
    assert run_audit(home).green_but_failing == ()


def test_stuck_claims_by_age_since_start_or_claim(home: Path) -> None:
    ledger = clean_home(home)
    running = execution("a", "running", NOW - 4 * HOUR, started_at=NOW - 3 * HOUR, pid=77)
    claimed = execution("b", "claimed", NOW - 5 * HOUR)
    fresh = execution("b", "running", NOW - 3 * HOUR, started_at=NOW - timedelta(minutes=30))
    insert(ledger, running, claimed, fresh)
    result = run_audit(home, stuck_after=2 * HOUR)
    assert [(c.execution_id, c.age, c.pid) for c in result.stuck] == [
        (claimed["id"], 5 * HOUR, 4242),
        (running["id"], 3 * HOUR, 77),
    ]
    assert result.anomalies == 2
    assert run_audit(home, stuck_after=6 * HOUR).stuck == ()


def test_per_day_counts_window_and_order(home: Path) -> None:
    ledger = create_ledger(home)
    write_jobs(home, [failing_job("a")])
    insert(
        ledger,
        execution("a", "completed", NOW - timedelta(days=1), started_at=NOW - timedelta(days=1)),
        execution("a", "failed", NOW - timedelta(days=1, hours=1), started_at=NOW),
        execution("a", "failed", NOW - timedelta(days=2), error=LOCKED_ERROR),
        execution("a", "failed", NOW - timedelta(days=9), error=LOCKED_ERROR),
    )
    result = run_audit(home, days=3)
    rows = [
        (d.day.isoformat(), d.executions, d.failed, d.never_started, d.locked)
        for d in result.per_day
    ]
    assert rows == [
        ("2026-11-04", 1, 1, 1, 1),
        ("2026-11-05", 2, 1, 0, 0),
        ("2026-11-06", 0, 0, 0, 0),
    ]


# --- time stamps ----------------------------------------------------------------------------


def test_mixed_offsets_compare_instants_not_text(home: Path) -> None:
    ledger = clean_home(home)
    # 06:30-05:00 is 11:30Z, later than 11:00+01:00 (10:00Z), though it sorts first as text.
    late_ok = execution("a", "completed", "2026-11-06T06:30:00-05:00", started_at="x")
    early_fail = execution("a", "failed", "2026-11-06T11:00:00+01:00", error=LOCKED_ERROR)
    # 08:30-05:00 is 13:30Z (after NOW, not stuck); 10:00+01:00 is 09:00Z (3 h old: stuck).
    future = execution("b", "claimed", "2026-11-06T08:30:00-05:00")
    old = execution("b", "claimed", "2026-11-06T10:00:00+01:00")
    insert(ledger, late_ok, early_fail, future, old)
    result = run_audit(home, stuck_after=2 * HOUR)
    assert result.green_but_failing == ()
    assert [claim.execution_id for claim in result.stuck] == [old["id"]]
    assert result.stuck[0].age == 3 * HOUR


def test_latest_failure_written_in_another_offset_is_found(home: Path) -> None:
    ledger = clean_home(home)
    # 07:00-05:00 is 12:00Z... minus a minute: the newest row, yet the smallest text.
    newest = execution("a", "failed", (NOW - timedelta(minutes=1)).astimezone(NEW_YORK))
    insert(ledger, newest, execution("a", "completed", NOW - HOUR, started_at=NOW - HOUR))
    [item] = run_audit(home).green_but_failing
    assert item.execution_id == newest["id"]


def test_day_buckets_use_the_report_zone(home: Path) -> None:
    ledger = create_ledger(home)
    write_jobs(home, [failing_job("a")])
    # 00:30 in Berlin is 23:30Z the day before.
    insert(ledger, execution("a", "completed", "2026-11-06T00:30:00+01:00", started_at="x"))
    utc = run_audit(home, days=2).per_day
    berlin = audit(home, now=NOW, day_zone=BERLIN, days=2).per_day
    assert [d.executions for d in utc] == [1, 0]
    assert [d.executions for d in berlin] == [0, 1]


def test_stamps_that_are_not_instants_are_reported_unchecked(home: Path) -> None:
    ledger = clean_home(home)
    insert(ledger, execution("a", "failed", "2026-11-06T10:00:00", error=LOCKED_ERROR))
    result = run_audit(home)
    [item] = result.unchecked
    assert "not a timezone-aware ISO time" in item.reason
    assert result.never_started == ()
    assert result.exit_code == exitcodes.ATTENTION


def test_parse_instant() -> None:
    assert parse_instant("2026-11-06T12:00:00Z") == NOW
    assert parse_instant("2026-11-06T07:00:00.5-05:00") == NOW + timedelta(milliseconds=500)
    assert parse_instant("2026-11-06 12:00:00") is None
    assert parse_instant(None) is None
    assert parse_instant(1762430400) is None


# --- what cannot be checked -----------------------------------------------------------------


def test_missing_table_is_unchecked_not_clean(home: Path) -> None:
    path = home / "cron" / "executions.db"
    path.parent.mkdir()
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE something_else (x)")
    write_jobs(home, [job("a")])
    result = run_audit(home)
    assert result.checked == ()
    assert [(u.check, u.reason) for u in result.unchecked] == [
        (None, f"{path} has no executions table")
    ]
    assert result.exit_code == exitcodes.ATTENTION


def test_missing_ledger_is_unchecked(home: Path) -> None:
    write_jobs(home, [job("a")])
    result = run_audit(home)
    [item] = result.unchecked
    assert item.reason.startswith("could not check the ledger: no ledger at")
    assert result.exit_code == exitcodes.ATTENTION


def test_original_schema_runs_every_check(home: Path) -> None:
    ledger = create_ledger(home, columns=ORIGINAL_COLUMNS)
    write_jobs(home, [job("a")])
    insert(ledger, execution("a", "failed", NOW - HOUR, error=LOCKED_ERROR))
    result = run_audit(home)
    assert result.unchecked == ()
    assert len(result.never_started) == 1 and len(result.green_but_failing) == 1


def test_columns_missing_leave_only_those_checks_undone(home: Path) -> None:
    columns = [name for name in COLUMNS if name not in ("started_at", "error")]
    ledger = create_ledger(home, columns=columns)
    write_jobs(home, [job("a")])
    insert(ledger, execution("a", "claimed", NOW - 5 * HOUR))
    result = run_audit(home)
    assert result.checked == (Check.STUCK,)
    assert len(result.stuck) == 1
    reasons = {item.check: item.reason for item in result.unchecked}
    assert reasons[Check.NEVER_STARTED] == (
        "the executions table has no column error, started_at (older schema?)"
    )
    assert set(reasons) == {
        Check.NEVER_STARTED, Check.GREEN_BUT_FAILING, Check.PER_DAY, Check.DELIVERED_BUT_LOST
    }  # fmt: skip
    assert "Never started (no started_at): not checked" in render_text(result)


def test_missing_jobs_file_still_audits_the_ledger(home: Path) -> None:
    ledger = create_ledger(home)
    insert(ledger, execution("a", "failed", NOW - HOUR, error=LOCKED_ERROR))
    result = run_audit(home)
    assert result.jobs_read is None
    assert Check.GREEN_BUT_FAILING not in result.checked
    assert [u.check for u in result.unchecked] == [Check.GREEN_BUT_FAILING]
    assert result.never_started[0].kind is LossKind.LOCKED
    assert result.never_started[0].job_name is None


def test_missing_jobs_file_with_clean_ledger_is_not_clean(home: Path) -> None:
    clean_home(home)
    (home / "cron" / "jobs.json").unlink()
    assert run_audit(home).exit_code == exitcodes.ATTENTION


@pytest.mark.parametrize("shape", ["object", "list", "map"])
@pytest.mark.parametrize("bom", [False, True], ids=["plain", "bom"])
def test_jobs_file_shapes(home: Path, shape: str, bom: bool) -> None:
    ledger = clean_home(home)
    write_jobs(home, [job("a"), job("b")], shape=shape, bom=bom)
    insert(ledger, execution("b", "failed", NOW - HOUR, started_at=NOW - HOUR, error="boom"))
    result = run_audit(home)
    assert result.jobs_read == 2
    assert [(item.job_id, item.job_name) for item in result.green_but_failing] == [("b", "job b")]


def test_jobs_entry_without_id_is_reported(home: Path) -> None:
    clean_home(home)
    write_jobs(home, [job("a"), {"name": "nameless"}, job("b")])
    result = run_audit(home)
    assert [u.reason for u in result.unchecked] == [
        "jobs.json entry #2 has no id; it was not reconciled"
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"jobs": [', "jobs file is not JSON"),
        (b'{"jobs": [{"id": "a", "last_st', "jobs file is not JSON"),
        (b"", "jobs file is not JSON"),
        (b'"just a string"', "not a jobs file"),
        (b"\xff\xfe{}", "not UTF-8"),
    ],
    ids=["torn", "torn-entry", "empty", "string", "binary"],
)
def test_bad_jobs_file_is_unchecked_and_the_ledger_still_audited(
    home: Path, content: bytes, message: str
) -> None:
    """Hermes writes jobs.json (a torn write happens): could not check, never a usage error."""
    ledger = clean_home(home)
    insert(ledger, execution("a", "failed", NOW - HOUR, error=LOCKED_ERROR))
    path = home / "cron" / "jobs.json"
    path.write_bytes(content)
    result = run_audit(home)
    [item] = result.unchecked
    assert item.check is Check.GREEN_BUT_FAILING
    assert item.reason.startswith(f"could not check the jobs file: {path}: ")
    assert message in item.reason
    assert result.checked == (
        Check.NEVER_STARTED, Check.STUCK, Check.PER_DAY, Check.DELIVERED_BUT_LOST
    )  # fmt: skip
    assert result.jobs_read is None and result.jobs_unreadable
    [group] = result.never_started
    assert (group.job_id, group.kind, group.job_name) == ("a", LossKind.LOCKED, None)
    assert result.exit_code == exitcodes.ATTENTION
    assert f"jobs    {path} (could not be read)" in render_text(result)


def test_missing_home_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="Hermes home does not exist"):
        run_audit(tmp_path / "nope")


# --- locks and read-only ----------------------------------------------------------------------


@contextmanager
def writer_holding_lock(ledger: Path, *, exclusive_mode: bool) -> Iterator[None]:
    """Another connection inside an uncommitted BEGIN EXCLUSIVE write.

    In WAL mode that alone does not block readers (they read the last commit); only
    `locking_mode=EXCLUSIVE` shuts them out. In rollback-journal mode it always does.
    """
    conn = sqlite3.connect(ledger, isolation_level=None)
    try:
        if exclusive_mode:
            conn.execute("PRAGMA locking_mode=EXCLUSIVE")
        conn.execute("BEGIN EXCLUSIVE")
        conn.execute("UPDATE executions SET status='failed', started_at=NULL")
        yield
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def test_locked_journal_ledger_answers_could_not_check_promptly(home: Path) -> None:
    ledger = create_ledger(home, wal=False)
    write_jobs(home, [job("a")])
    insert(ledger, execution("a", "completed", NOW - HOUR, started_at=NOW - HOUR))
    with writer_holding_lock(ledger, exclusive_mode=False):
        began = time.monotonic()
        result = run_audit(home, busy_timeout=0.3)
        elapsed = time.monotonic() - began
    assert elapsed < 3
    [item] = result.unchecked
    assert "database is locked" in item.reason
    assert result.checked == ()
    assert result.executions_read is None
    assert result.exit_code == exitcodes.ATTENTION


def test_wal_writer_does_not_block_the_audit(home: Path) -> None:
    ledger = clean_home(home)
    with writer_holding_lock(ledger, exclusive_mode=False):
        result = run_audit(home, busy_timeout=0.3)
    assert result.unchecked == ()
    assert result.never_started == ()  # the writer's uncommitted rows are not seen


def test_cli_reports_exclusive_lock_within_bounded_time(home: Path) -> None:
    ledger = clean_home(home)
    with writer_holding_lock(ledger, exclusive_mode=True):
        began = time.monotonic()
        done = run_cli("--home", home, "--json", timeout=30)
        elapsed = time.monotonic() - began
    assert done.returncode == exitcodes.ATTENTION, done.stderr
    document = json.loads(done.stdout)
    [item] = document["unchecked"]
    assert item["check"] is None
    assert "database is locked" in item["reason"]
    assert document["checked"] == []
    assert elapsed < 15  # 2 s busy timeout plus interpreter start, never a hang


def _snapshot(paths: list[Path]) -> list[tuple[bytes, int]]:
    return [(path.read_bytes(), path.stat().st_mtime_ns) for path in paths]


def test_audit_does_not_modify_the_ledger(home: Path) -> None:
    ledger = clean_home(home)
    insert(ledger, execution("a", "failed", NOW - HOUR, error=LOCKED_ERROR))
    # Keep a writer connection open so the newest rows stay in the -wal file, as on a live host.
    holder = sqlite3.connect(ledger)
    try:
        holder.execute("SELECT count(*) FROM executions").fetchall()
        insert(ledger, execution("b", "failed", NOW - HOUR, error=LOCKED_ERROR))
        files = [ledger, ledger.with_name("executions.db-wal")]
        before = _snapshot(files)
        code, document = cli_json("--home", home)
        assert _snapshot(files) == before
    finally:
        holder.close()
    assert code == exitcodes.ATTENTION
    assert {group["job_id"] for group in document["never_started"]} == {"a", "b"}


# --- the command line -------------------------------------------------------------------------


def test_cli_clean_exit_and_json_contract(home: Path) -> None:
    clean_home(home, now=datetime.now(UTC))
    code, document = cli_json("--home", home, "--days", "4")
    assert code == exitcodes.OK
    assert document["schema"] == "patchkeeper/1"
    assert document["command"] == "audit"
    assert document["exit_code"] == 0
    assert document["anomalies"] == 0
    assert document["unchecked"] == []
    assert document["checked"] == [
        "never_started", "green_but_failing", "stuck", "per_day", "delivered_but_booked_lost"
    ]  # fmt: skip
    assert len(document["per_day"]) == 4
    assert sum(day["executions"] for day in document["per_day"]) == 6
    assert set(document) >= {"home", "ledger", "jobs_file", "now", "stuck_after_seconds"}


def test_cli_anomalies_exit_5_with_text_report(home: Path) -> None:
    now = datetime.now(UTC)
    ledger = clean_home(home, now=now)
    insert(
        ledger,
        execution("a", "failed", now - HOUR, error=LOCKED_ERROR),
        execution("b", "running", now - 2 * HOUR, started_at=now - 100 * timedelta(minutes=1)),
    )
    done = run_cli("--home", home, "--stuck-after", "90m")
    assert done.returncode == exitcodes.ATTENTION, done.stderr
    assert 'lost to "database is locked"' in done.stdout
    assert "Green but failing (dashboard ok, ledger says otherwise): 1" in done.stdout
    assert "Stuck claims (older than 1h 30m): 1" in done.stdout
    assert "Result: 3 anomalies (exit 5)" in done.stdout
    code, document = cli_json("--home", home, "--stuck-after", "1h30m")
    assert (code, document["exit_code"], document["anomalies"]) == (5, 5, 3)
    assert document["stuck_after_seconds"] == 5400


def test_cli_reads_hermes_home_and_profiles(home: Path) -> None:
    profile = home / "profiles" / "work"
    profile.mkdir(parents=True)
    clean_home(profile, now=datetime.now(UTC))
    env = {**os.environ, "HERMES_HOME": str(home), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "patchkeeper", "audit", "--profile", "work", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == exitcodes.OK, done.stderr
    assert json.loads(done.stdout)["home"] == str(profile)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--profile", "nope"], "profiles/nope: profile 'nope' does not exist"),
        (["--stuck-after", "2x"], "is not a duration"),
    ],
)
def test_cli_bad_input_exits_2(home: Path, args: list[str], expected: str) -> None:
    done = run_cli("--home", home, *args)
    assert done.returncode == exitcodes.USAGE
    assert expected in done.stderr
    assert done.stdout == ""


def test_cli_torn_jobs_file_is_could_not_check_exit_5(home: Path) -> None:
    now = datetime.now(UTC)
    ledger = clean_home(home, now=now)
    insert(ledger, execution("a", "failed", now - HOUR, error=LOCKED_ERROR))
    path = home / "cron" / "jobs.json"
    path.write_text('{"jobs": [{"id": "a", "name": "job a", "last_st')
    done = run_cli("--home", home, "--json")
    assert done.returncode == exitcodes.ATTENTION, done.stderr
    assert done.stderr == ""
    document = json.loads(done.stdout)
    [item] = document["unchecked"]
    assert item["check"] == "green_but_failing"
    assert item["reason"].startswith(
        f"could not check the jobs file: {path}: jobs file is not JSON"
    )
    assert document["checked"] == [
        "never_started", "stuck", "per_day", "delivered_but_booked_lost"
    ]  # fmt: skip
    assert [group["kind"] for group in document["never_started"]] == ["locked"]
    assert document["jobs_read"] is None
    text = run_cli("--home", home)
    assert text.returncode == exitcodes.ATTENTION
    assert "Could not check (this is not a clean result):" in text.stdout
    assert "Green but failing (dashboard ok, ledger says otherwise): not checked" in text.stdout
    assert 'lost to "database is locked"' in text.stdout


def test_cli_missing_home(tmp_path: Path) -> None:
    done = run_cli("--home", tmp_path / "absent")
    assert done.returncode == exitcodes.USAGE
    assert "absent: Hermes home does not exist" in done.stderr


def test_render_text_and_dict_agree(home: Path) -> None:
    ledger = clean_home(home)
    insert(ledger, execution("a", "failed", NOW - HOUR, error=LOCKED_ERROR))
    result = run_audit(home)
    document = to_dict(result)
    assert document["never_started"][0]["kind"] == "locked"
    assert document["green_but_failing"][0]["job_id"] == "a"
    text = render_text(result)
    assert "job a [a]  failed x1  2026-11-06 11:00:00" in text
    assert f"Result: 2 anomalies (exit {document['exit_code']})" in text
