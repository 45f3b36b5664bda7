"""Doctor on the practice upstream: real git state, real probes of the install, real receipts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from helpers import git, run_cli, run_json

from patchkeeper.demo.sandbox import Sandbox
from patchkeeper.engine.patching import apply_patches
from patchkeeper.install.checkout.install import open_install
from patchkeeper.install.checkout.version_probes import version_from_command
from patchkeeper.install.records import update_journal as jr
from patchkeeper.patchset.bundled import bundled_patches
from patchkeeper.patchset.load import load_patch_set
from patchkeeper.patchset.settings import load_settings
from patchkeeper.proof.doctor.diagnose import diagnose
from patchkeeper.proof.doctor.finding import DoctorReport, Finding


@pytest.fixture
def doctor_sandbox(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> Sandbox:
    """The sandbox with the bundled ledger check, receipts looked for in its own home."""
    shutil.copy2(bundled_patches() / "smoke" / "ledger_adoption.py", sandbox.patches / "smoke")
    monkeypatch.setenv("HERMES_HOME", str(sandbox.home))
    return sandbox


def patched(sandbox: Sandbox) -> Sandbox:
    apply_patches(
        open_install(sandbox.install),
        load_settings(sandbox.patches),
        load_patch_set(sandbox.patches),
    )
    return sandbox


def diagnosed(sandbox: Sandbox) -> tuple[DoctorReport, dict[str, Finding]]:
    report = diagnose(sandbox.install, sandbox.patches)
    return report, {f.name: f for f in report.findings}


def failing(report: DoctorReport) -> list[str]:
    return [f.name for f in report.findings if not f.ok]


def test_unpatched_the_patches_and_the_budget_chain_do_not_hold(doctor_sandbox: Sandbox) -> None:
    code, document = run_json(
        "doctor", "--install", doctor_sandbox.install, "--patches", doctor_sandbox.patches
    )
    assert code == 5
    findings = {f["name"]: f for f in document["findings"]}
    assert [name for name, f in findings.items() if not f["ok"]] == ["patches", "timeout budget"]
    budget = findings["timeout budget"]
    assert budget["summary"] == (
        "chain does NOT hold: gateway waits 30 s, grace 30 s, retry budget 5 s, busy timeout "
        "5 s (failing: gateway passes its deadline; retry budget >= 2 x busy timeout)"
    )
    assert (
        "ledger_adoption: retry budget >= 2 x busy timeout: fail, "
        "5 s (derived: one attempt (no retry), one busy timeout) vs 5 s busy timeout; "
        "the worker adopts once, no retry" in budget["details"]
    )
    assert budget["details"][0].startswith("ledger_adoption: run the worker path: pass, adopted")
    assert budget["facts"]["ledger_adoption"]["worker_retries"] is False
    assert findings["patches"]["summary"] == "1 of 3 in place"  # heartbeat-fence: upstream's
    assert findings["last update"]["summary"].startswith("no update recorded")


def test_patched_everything_holds_on_one_screen(doctor_sandbox: Sandbox) -> None:
    patched(doctor_sandbox)
    proc = run_cli(
        "doctor", "--install", doctor_sandbox.install, "--patches", doctor_sandbox.patches
    )
    assert proc.returncode == 0, proc.stdout
    lines = proc.stdout.splitlines()
    assert lines[0] == f"doctor: {doctor_sandbox.install}"
    assert lines[-1] == "safe to update unattended: yes"
    assert len(lines) < 25  # one screen
    budget = next(line for line in lines if "timeout budget" in line)
    assert budget.split(None, 3)[-1] == (
        "chain holds: gateway waits 30 s, grace 30 s, retry budget 24 s, stop margin 6 s, "
        "busy timeout 5 s"
    )


def test_a_grace_too_short_for_a_retry_breaks_the_chain(doctor_sandbox: Sandbox) -> None:
    patched(doctor_sandbox)
    executions = doctor_sandbox.install / "cron" / "executions.py"
    text = executions.read_text()
    executions.write_text(text.replace("GRACE_SECONDS = 30.0", "GRACE_SECONDS = 9.0"))
    report, findings = diagnosed(doctor_sandbox)
    assert failing(report) == ["timeout budget"]
    assert report.exit_code == 5
    assert findings["timeout budget"].summary.startswith(
        "chain does NOT hold: gateway waits 9 s, grace 9 s"
    )
    assert (
        "ledger_adoption: retry budget >= 2 x busy timeout: fail, "
        "3 s (derived: the payload's deadline after spawn - stop margin) vs 5 s busy timeout"
        in findings["timeout budget"].details
    )


def test_a_probe_that_cannot_check_is_not_ok(doctor_sandbox: Sandbox) -> None:
    patched(doctor_sandbox)
    executions = doctor_sandbox.install / "cron" / "executions.py"
    text = executions.read_text()
    executions.write_text(text.replace("def adopt_claimed_execution(", "def adopt("))
    report, findings = diagnosed(doctor_sandbox)
    assert "timeout budget" in failing(report)
    assert findings["timeout budget"].summary == (
        "could not check: ledger_adoption: "
        "cron.executions has no adopt_claimed_execution() (upstream renamed it?)"
    )
    assert findings["timeout budget"].details == [
        "ledger_adoption: run the launcher: error, "
        "cron.executions has no adopt_claimed_execution() (upstream renamed it?)",
        "fire_claim_heartbeat: heartbeat budget: pass, "
        "heartbeat_fire_claim takes no fire fence: a slow delivery cannot starve it",
    ]


def test_a_launcher_that_crashes_is_named_not_called_a_holding_chain(
    doctor_sandbox: Sandbox,
) -> None:
    """Issue 14: the 0.21 variant forced onto a 0.21.2-like launcher (no grace imported)
    reads as wired, yet every hand-off dies; doctor runs the launcher and names the name."""
    scheduler = doctor_sandbox.install / "cron" / "scheduler.py"
    patch = doctor_sandbox.patches / "adoption-retry" / "scheduler-0.21.patch"
    text = scheduler.read_text()
    scheduler.write_text(text.replace("    HANDOFF_ADOPTION_GRACE_SECONDS,\n", "", 1))
    applied = subprocess.run(["git", "apply", str(patch)], cwd=doctor_sandbox.install,
                             capture_output=True, text=True, check=False)  # fmt: skip
    assert applied.returncode == 0, applied.stderr
    _, findings = diagnosed(doctor_sandbox)
    budget = findings["timeout budget"]
    assert not budget.ok
    assert budget.summary == (
        "could not check: ledger_adoption: the launcher failed before it spawned a worker: "
        "NameError: name 'HANDOFF_ADOPTION_GRACE_SECONDS' is not defined"
    )


def test_under_patchkeepers_own_interpreter_the_cause_is_the_interpreter(
    doctor_sandbox: Sandbox,
) -> None:
    """Every probe step may pass there; the chain is not to blame, the interpreter is."""
    patched(doctor_sandbox)
    config = doctor_sandbox.config.read_text()
    doctor_sandbox.config.write_text(
        "\n".join(line for line in config.splitlines() if not line.startswith("python ="))
    )
    _, findings = diagnosed(doctor_sandbox)
    budget = findings["timeout budget"]
    assert not budget.ok
    assert budget.summary.startswith("could not check: interpreter: no [install] python set")
    assert budget.summary.endswith("; the chain was not judged")
    assert all(line.split(": ")[2].startswith("pass") for line in budget.details), budget.details


def test_leftovers_in_git_are_named(doctor_sandbox: Sandbox) -> None:
    """Like `hermes update`: the stash takes the patches with it, and the fix is gone.

    The operator's own stash entries are theirs, not leftovers.
    """
    patched(doctor_sandbox)
    install = doctor_sandbox.install
    (install / "cron" / "scheduler.py").write_text("# edited by hand\n")
    stash = ("stash", "push", "-q", "--include-untracked")  # new patch files go too
    git(install, *stash, "-m", "hermes-update-autostash-20261001-120000")
    autostash = git(install, "rev-parse", "stash@{0}")
    (install / "hermes_constants.py").write_text("# my own work\n")
    git(install, "stash", "push", "-q", "-m", "my own work")
    (install / ".git" / "MERGE_AUTOSTASH").write_text(autostash + "\n")
    report, findings = diagnosed(doctor_sandbox)
    assert failing(report) == ["git state", "patches", "timeout budget"]
    assert findings["git state"].details == [
        "stash stash@{1} On main: hermes-update-autostash-20261001-120000 (mixed)",
        f"autostash-file {install / '.git' / 'MERGE_AUTOSTASH'} (mixed)",
    ]


def write_receipt(home: Path, name: str, started: str, outcome: str, stash: str | None) -> None:
    folder = home / "logs" / "update_receipts"
    folder.mkdir(parents=True, exist_ok=True)
    steps = [] if stash is None else [
        {"name": "local_changes_stash", "ok": not stash.startswith("parked"), "detail": stash}
    ]  # fmt: skip
    receipt = {"schema": 1, "started_at": started, "outcome": outcome, "steps": steps}
    (folder / name).write_text(json.dumps(receipt))


def test_the_last_hermes_update_receipt_says_how_it_ended(doctor_sandbox: Sandbox) -> None:
    patched(doctor_sandbox)
    home = doctor_sandbox.home
    write_receipt(home, "update_20261001_120000_a.json", "2026-10-01T12:00:00+00:00",
                  "success", "restored: 1234abcd")  # fmt: skip
    report, findings = diagnosed(doctor_sandbox)
    assert report.exit_code == 0
    assert findings["last update"].summary == (
        "hermes update at 2026-10-01T12:00:00+00:00: outcome success, local changes restored"
    )
    write_receipt(home, "update_20261008_120000_b.json", "2026-10-08T12:00:00+00:00",
                  "success", "parked: 5678ef01 (restore hit conflicts)")  # fmt: skip
    report, findings = diagnosed(doctor_sandbox)
    assert failing(report) == ["last update"]
    assert findings["last update"].summary.endswith("outcome success, local changes parked")
    assert "local_changes_stash: parked: 5678ef01 (restore hit conflicts)" in (
        findings["last update"].details
    )


def test_patchkeepers_own_journal_comes_before_receipts(doctor_sandbox: Sandbox) -> None:
    patched(doctor_sandbox)
    write_receipt(doctor_sandbox.home, "update_20261001_120000_a.json",
                  "2026-10-01T12:00:00+00:00", "failed", None)  # fmt: skip
    state = open_install(doctor_sandbox.install).state_dir
    run = jr.Journal(id="20261002T120000Z-1", pid=1, started_at="2026-10-02T12:00:00+00:00",
                     old_head="0" * 40, old_version="0.21.5", stash_top=None, phase=10,
                     upstream_exit=0, upstream_ok=True)  # fmt: skip
    jr.save(state, run)
    report, findings = diagnosed(doctor_sandbox)
    assert findings["last update"].summary == (
        "patchkeeper update 20261002T120000Z-1 (started 2026-10-02T12:00:00+00:00) stopped in "
        "phase 10 (report); run `patchkeeper recover`"
    )
    assert failing(report) == ["last update"]
    jr.finish(state, run)
    report, findings = diagnosed(doctor_sandbox)
    assert findings["last update"].summary == (
        "patchkeeper update 20261002T120000Z-1 at 2026-10-02T12:00:00+00:00: finished"
    )
    assert report.exit_code == 0


def test_no_install_and_no_interpreter_are_findings_not_tracebacks(
    doctor_sandbox: Sandbox, tmp_path: Path
) -> None:
    proc = run_cli("doctor", "--install", tmp_path / "nowhere", "--patches",
                   doctor_sandbox.patches)  # fmt: skip
    assert proc.returncode == 5
    assert "Traceback" not in proc.stderr
    assert f"FAIL  install    {tmp_path / 'nowhere'}: install not found" in proc.stdout
    config = doctor_sandbox.config
    config.write_text(config.read_text().replace("python = ", 'python = "venv/bin/python"\n#'))
    report, findings = diagnosed(doctor_sandbox)
    assert "interpreter" in failing(report)
    note = findings["interpreter"].details[0]
    assert note.startswith("[install] python venv/bin/python not found")


def test_an_update_that_ended_with_a_conflict_is_not_ok(sandbox: Sandbox) -> None:
    patched(sandbox)
    shutil.rmtree(sandbox.patches / "smoke")  # not under test here, and slow on purpose
    sandbox.publish("v2026.11.9")
    update = run_cli("update", "--install", sandbox.install, "--patches", sandbox.patches)
    assert update.returncode == 3, update.stdout + update.stderr
    report, findings = diagnosed(sandbox)
    assert not findings["last update"].ok
    assert findings["last update"].summary.endswith("finished with exit 3")
    assert report.exit_code == 5


def test_an_update_stopped_by_its_preview_is_reported_as_such(sandbox: Sandbox) -> None:
    patched(sandbox)
    sandbox.publish("v2026.11.9")
    sandbox.fetch_tags()
    args = ("--install", sandbox.install, "--patches", sandbox.patches)
    assert run_cli("update", "--preview", "v2026.11.9", *args).returncode == 3
    _, findings = diagnosed(sandbox)
    assert not findings["last update"].ok
    assert findings["last update"].summary.endswith(
        "the update did not happen: stopped at its preview of v2026.11.9"
    )
    # status agrees: the update asked for did not happen, and says how to retry it.
    status = run_cli("status", *args)
    assert status.returncode == 5
    assert "did not happen: stopped at its preview of v2026.11.9" in status.stdout


def test_receipts_with_a_bom_or_torn_are_read_or_named(doctor_sandbox: Sandbox) -> None:
    """A BOM is read; a torn receipt newer than the last good one means 'could not check'."""
    patched(doctor_sandbox)
    folder = doctor_sandbox.home / "logs" / "update_receipts"
    parked = "parked: 5678ef01 (restore hit conflicts)"
    write_receipt(doctor_sandbox.home, "update_20261001_120000_a.json",
                  "2026-10-01T12:00:00+00:00", "success", parked)  # fmt: skip
    good = folder / "update_20261001_120000_a.json"
    good.write_bytes(b"\xef\xbb\xbf" + good.read_bytes())
    report, findings = diagnosed(doctor_sandbox)
    assert failing(report) == ["last update"]
    assert findings["last update"].summary.endswith("outcome success, local changes parked")
    torn = folder / "update_20261008_120000_b.json"
    torn.write_text('{"schema": 1, "steps": [{"name": "local_')
    report, findings = diagnosed(doctor_sandbox)
    assert failing(report) == ["last update"]
    assert findings["last update"].summary.startswith(
        "could not check: receipt update_20261008_120000_b.json is unreadable (not JSON"
    )
    assert findings["last update"].details[0].startswith(f"hermes update receipt {torn}")
    torn.rename(folder / "update_20260901_120000_b.json")  # older than the good one: a note
    write_receipt(doctor_sandbox.home, "update_20261002_120000_c.json",
                  "2026-10-02T12:00:00+00:00", "success", "restored: 1234abcd")  # fmt: skip
    report, findings = diagnosed(doctor_sandbox)
    assert report.exit_code == 0
    assert findings["last update"].summary.endswith("local changes restored")
    assert any("could not be read" in line for line in findings["last update"].details)


def alive(pid: int) -> bool:
    """Whether PID runs (a zombie waiting for its reaper does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def gone_soon(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def script(path: Path, body: str) -> Path:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def test_a_hanging_version_command_is_ended_with_its_helpers(tmp_path: Path) -> None:
    """The command starts a helper in the background and hangs: both are gone at the timeout."""
    pidfile = tmp_path / "helper.pid"
    hang = script(tmp_path / "hang.sh", f"sleep 300 &\necho $! > {pidfile}\nsleep 300")
    began = time.monotonic()
    info = version_from_command(tmp_path, (str(hang),), timeout=1.0)
    elapsed = time.monotonic() - began
    assert info.version is None and info.source == "unknown"
    assert info.text == "version command timed out after 1 s"
    assert elapsed < 1.0 + 3.0 + 2.0  # the timeout, the TERM-to-KILL grace, the pipe grace
    helper = int(pidfile.read_text())
    try:
        assert gone_soon(helper)
    finally:
        if alive(helper):
            os.kill(helper, 9)


def test_a_version_command_leaves_no_helper_behind(tmp_path: Path) -> None:
    pidfile = tmp_path / "helper.pid"
    quick = script(tmp_path / "v.sh", f"sleep 300 &\necho $! > {pidfile}\necho 0.21.5+3.gabc1234")
    info = version_from_command(tmp_path, (str(quick),), timeout=10.0)
    assert (str(info.version), info.source) == ("0.21.5+3.gabc1234", "command")
    assert gone_soon(int(pidfile.read_text()))


def test_the_interpreter_probe_leaves_no_helper_behind(
    doctor_sandbox: Sandbox, tmp_path: Path
) -> None:
    pidfile = tmp_path / "helper.pid"
    # Only the interpreter probe (`python -c ...`) leaves a helper; smoke probes just answer.
    body = f'if [ "$1" = -c ]; then sleep 300 & echo $! > {pidfile}; fi\necho 3.14.0'
    fake = script(tmp_path / "python", body)
    config = doctor_sandbox.config
    config.write_text(config.read_text().replace("python = ", f'python = "{fake}"\n#'))
    _, findings = diagnosed(doctor_sandbox)
    assert findings["interpreter"].summary == f"{fake} (Python 3.14.0)"
    assert gone_soon(int(pidfile.read_text()))


def test_an_install_whose_version_is_unknown_is_not_ok(sandbox: Sandbox) -> None:
    for tag in git(sandbox.install, "tag", "--list").split():
        git(sandbox.install, "tag", "-d", tag)
    version_file = sandbox.install / "hermes_cli" / "__init__.py"  # the version file goes too
    version_file.write_text(version_file.read_text().replace("__version__ = ", "__vers = "))
    (sandbox.install / "install-stamp.json").unlink()  # and the installer's stamp
    report, findings = diagnosed(sandbox)
    assert not findings["install"].ok and findings["install"].summary.endswith(
        "the version is unknown"
    )
    assert report.exit_code == 5


def test_doctor_names_delivered_runs_booked_as_a_lost_fire_claim(doctor_sandbox: Sandbox) -> None:
    """Issue 16: the symptom heartbeat-fence fixes, read from the ledger by audit's own check,
    read only (the ledger's bytes are the same after)."""
    from datetime import timedelta

    from ledgers import NOW, create_ledger, execution, insert, job, write_jobs

    from patchkeeper.proof.doctor.fire_claims import fire_claim_finding

    install = open_install(doctor_sandbox.install)
    assert fire_claim_finding(install).ok  # no ledger yet: nothing to read
    ledger = create_ledger(doctor_sandbox.home)
    write_jobs(doctor_sandbox.home, [job("news")])
    claimed = NOW - timedelta(hours=2)
    lost = execution(
        "news", "failed", claimed, started_at=claimed + timedelta(seconds=1),
        error="Fire claim ownership lost; stale result was discarded.",
        delivery_outcome="delivered",
    )  # fmt: skip
    insert(ledger, lost, execution("news", "completed", NOW - timedelta(hours=1)))
    before = ledger.read_bytes()
    finding = fire_claim_finding(install)
    assert not finding.ok
    assert finding.summary.startswith(
        '1 run(s) delivered yet booked failed as "fire claim ownership lost"'
    )
    assert "patch heartbeat-fence fixes it" in finding.summary
    assert finding.details == [
        f"{lost['id']} (job job news): Fire claim ownership lost; stale result was discarded."
    ]
    assert ledger.read_bytes() == before
    report, _ = diagnosed(doctor_sandbox)
    assert "fire claims" in failing(report) and report.exit_code == 5
