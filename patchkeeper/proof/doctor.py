"""Doctor: is this install safe to update unattended? Each question is one finding.

The findings: the install and its interpreter are found; git is not in the middle of a merge
and holds no leftovers; the patch set lints; every patch is in place; the timeout budget the
smoke checks read from the install holds (asked with `--probe`, which only reads); the last
update finished well. Nothing here writes to the install's work tree (the probes' scratch
HOME is under .git/patchkeeper/smoke/, removed afterwards). A finding that could not be checked
is not ok: "could not check" never reads as healthy.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from patchkeeper.engine.patching import worktree_status
from patchkeeper.install import journal as jr
from patchkeeper.install.checkout import (
    Install,
    install_version,
    open_install,
    operation_in_progress,
)
from patchkeeper.install.instants import parse_instant
from patchkeeper.install.processes import run_in_group
from patchkeeper.leftovers.find import find_leftovers
from patchkeeper.leftovers.receipts import STASH_STEP, Receipts, install_receipts
from patchkeeper.leftovers.updater_refs import describe, updater_backups
from patchkeeper.model import exitcodes
from patchkeeper.model.errors import PatchkeeperError, UserError
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.model.verdict import tree_exit_code
from patchkeeper.patchset.load import PatchSet, dangling_smoke, inspect_patch_set
from patchkeeper.patchset.settings import DEFAULT_INSTALL, Settings, load_settings
from patchkeeper.proof import smoke

PROBE_ARGS = ("--probe",)
INTERPRETER_TIMEOUT = 30.0  # `python -c` printing its version
PROBE_TIMEOUT = 60.0  # a probe only reads; it gets at most this (or [smoke] timeout if lower)


@dataclass
class Finding:
    name: str
    ok: bool
    summary: str
    details: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass
class DoctorReport:
    install_path: Path
    findings: list[Finding]
    patches: list[PatchResult] = field(default_factory=list)  # how each stands (`status`)

    @property
    def exit_code(self) -> int:
        return exitcodes.OK if all(f.ok for f in self.findings) else exitcodes.ATTENTION


@dataclass(frozen=True)
class _Context:
    settings: Settings
    patch_set: PatchSet
    install: Install


# ---------------------------------------------------------------- install and interpreter


def install_finding(install: Install, settings: Settings) -> Finding:
    version = install_version(install, settings)
    head = install.head()
    summary = f"{install.path} (version {version}, HEAD {head[:12] if head else 'none'})"
    if head is None:
        return Finding("install", False, f"{summary}: no commit checked out")
    if version.version is None:  # variants cannot be chosen: never "safe"
        return Finding("install", False, f"{summary}: the version is unknown")
    return Finding("install", True, summary)


def interpreter_finding(install: Install, settings: Settings) -> Finding:
    python = smoke.find_python(install, settings)
    if not python.found:
        return Finding("interpreter", False, f"{python.path} not found", [python.note])
    output: list[bytes] = []
    done = run_in_group(
        [str(python.path), "-c", "import sys; print(sys.version.split()[0])"],
        install.path,
        timeout=INTERPRETER_TIMEOUT,
        on_stdout=output.append,
        on_stderr=lambda _line: None,
        end_group=True,  # nothing it starts outlives the probe
    )
    if done.exit_status is None:
        return Finding("interpreter", False, f"{python.path} does not run: {done.start_error}")
    if done.timed_out:
        reason = f"no answer within {INTERPRETER_TIMEOUT:g} s (stopped)"
        return Finding("interpreter", False, f"{python.path} does not run: {reason}")
    if done.exit_status != 0:
        return Finding(
            "interpreter", False, f"{python.path} does not run (exit {done.exit_status})"
        )
    version = b"".join(output).decode(errors="replace").strip()
    summary = f"{python.path} (Python {version})"
    return Finding("interpreter", not python.note, summary, [python.note] if python.note else [])


# ---------------------------------------------------------------- git state


def git_state_finding(install: Install, patch_set: PatchSet) -> Finding:
    """No merge or rebase under way, nothing an update left behind (leftovers.py), and no
    commits that only the updater's rescue refs still hold (updater_refs.py)."""
    problems = [reason] if (reason := operation_in_progress(install)) else []
    problems += [
        f"{item.kind} {item.label} ({item.classification})"
        for item in find_leftovers(install, patch_set)
    ]
    backups = updater_backups(install.path)
    problems += [
        f"{backup.kind} {backup.ref}: look with `{backup.inspect_command()}`"
        for backup in backups
        if backup.needs_a_person
    ]
    noted = f"; {describe(backups)}" if backups else ""
    if not problems:
        return Finding("git state", True, f"no merge in progress, no leftovers{noted}")
    summary = f"{len(problems)} leftover(s) or unfinished operation(s){noted}"
    return Finding("git state", False, summary, problems)


# ---------------------------------------------------------------- patch set and patches


def lint_finding(patch_set: PatchSet, problems: list[str], reason: str = "") -> Finding:
    count = len(patch_set.patches)
    which = f"{patch_set.root} ({reason})" if reason else str(patch_set.root)
    if problems:
        return Finding("patch set", False, f"{which}: {len(problems)} lint problem(s)", problems)
    return Finding("patch set", True, f"{which}: {count} patch(es), lints clean")


def patches_finding(context: _Context, seen: list[PatchResult] | None = None) -> Finding:
    report = worktree_status(context.install, context.settings, context.patch_set)
    results = report.results
    if seen is not None:
        seen.extend(results)
    details = [f"{r.name}: {r.outcome}" + (f" ({r.detail})" if r.detail else "") for r in results]
    ok = tree_exit_code(results, pending_needs_attention=True) == exitcodes.OK
    in_place = sum(1 for r in results if r.in_place)
    summary = f"{in_place} of {len(results)} in place"
    return Finding("patches", ok, summary, details)


# ---------------------------------------------------------------- the timeout budget


def _probe_names(context: _Context) -> list[str]:
    named = [name for p in context.patch_set.patches for v in p.variants for name in v.smoke]
    return list(dict.fromkeys([*named, *context.settings.smoke_checks]))


def budget_finding(context: _Context) -> Finding:
    """Run the path every smoke check the patch set relies on probes (`--probe`: the
    launcher and the worker, no stall) and judge the chain from what it measured."""
    names = _probe_names(context)
    if not names:
        return Finding("timeout budget", True, "no smoke check names a budget to read")
    timeout = min(PROBE_TIMEOUT, context.settings.smoke_timeout)
    report = smoke.run_checks(
        context.install,
        context.settings,
        context.patch_set,
        names,
        args=PROBE_ARGS,
        timeout=timeout,
    )
    details: list[str] = []
    for result in report.results:
        if result.verdict == smoke.ERROR and not result.steps:
            details.append(f"{result.name}: could not check: {_without_prefix(result.detail)}")
        details += [f"{result.name}: {s.name}: {s.verdict}, {s.detail}" for s in result.steps]
    facts = {result.name: result.extra for result in report.results}
    ok = report.exit_code == exitcodes.OK
    summary = f"chain holds{_figures(facts)}" if ok else _budget_cause(report, facts)
    return Finding("timeout budget", ok, summary, details, facts)


def _without_prefix(detail: str) -> str:
    return detail.removeprefix("could not check: ")


def _budget_cause(report: smoke.SmokeReport, facts: dict[str, dict[str, Any]]) -> str:
    """Why the chain could not be judged or does not hold, first cause first: the
    interpreter, then what the path raised (a name it lacks), then the failing figures."""
    python = report.python
    if not python.found or not python.installs_own:
        return f"could not check: interpreter: {python.note}; the chain was not judged"
    for result in report.results:
        broken = [s for s in result.steps if s.verdict == smoke.ERROR]
        if result.verdict == smoke.ERROR and (broken or not result.steps or result.detail):
            cause = broken[0].detail if broken else result.detail
            return f"could not check: {result.name}: {_without_prefix(cause)}"
    failing = [s.name for r in report.results for s in r.steps if s.verdict == smoke.FAIL]
    return f"chain does NOT hold{_figures(facts)} (failing: {'; '.join(failing)})"


def _figures(facts: dict[str, dict[str, Any]]) -> str:
    """': NUMBERS' when a check reported them in the common vocabulary (seconds), else ''."""
    words = {
        "gateway_wait_seconds": "gateway waits",
        "grace_seconds": "grace",
        "retry_budget_seconds": "retry budget",
        "stop_margin_seconds": "stop margin",
        "busy_timeout_seconds": "busy timeout",
    }
    numbers = []
    for check_facts in facts.values():
        present = [(key, label) for key, label in words.items() if key in check_facts]
        numbers += [f"{label} {check_facts[key]:g} s" for key, label in present]
    return f": {', '.join(numbers)}" if numbers else ""


# ---------------------------------------------------------------- the last update


def _unfinished_finding(install: Install) -> Finding | None:
    """An update patchkeeper started and never finished: it needs `recover`, whatever else."""
    try:
        unfinished = jr.load(install.state_dir)
    except PatchkeeperError as exc:
        return Finding("last update", False, str(exc))
    if unfinished is None:
        return None
    run = f"patchkeeper update {unfinished.id} (started {unfinished.started_at})"
    stopped = f"stopped in phase {unfinished.phase_label}; run `patchkeeper recover`"
    return Finding("last update", False, f"{run} {stopped}")


def _last_run(install: Install) -> tuple[Path, datetime] | None:
    """patchkeeper's newest finished run: its journal and when it ended.

    The journal is last written as the run finishes, so its modification time is the end
    (never earlier than the start it records).
    """
    runs = sorted((install.state_dir / jr.RUNS_DIR).glob(f"*/{jr.JOURNAL_FILE}"))
    if not runs:
        return None
    try:
        ended = datetime.fromtimestamp(runs[-1].stat().st_mtime, UTC)
        started = parse_instant(json.loads(runs[-1].read_text(encoding="utf-8"))["started_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return runs[-1], datetime.max.replace(tzinfo=UTC)  # unreadable: the finding says so
    return runs[-1], max(ended, started or ended)


def _journal_finding(path: Path) -> Finding:
    """From one finished patchkeeper run's journal."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return Finding("last update", False, f"{path}: unreadable ({exc})")
    run = f"patchkeeper update {data.get('id')} at {data.get('started_at')}"
    code = data.get("extra", {}).get("exit_code", 0)
    if not_done := data.get("extra", {}).get("not_done"):  # e.g. rolled back after a failure
        unmoved = data.get("old_head") == data["extra"].get("head_after")
        verb = "happen" if data["extra"].get("rolled_back") or unmoved else "finish"
        return Finding("last update", False, f"{run}: the update did not {verb}: {not_done}")
    if data.get("upstream_ok") is None:  # e.g. a --preview that found a conflict
        return Finding("last update", False, f"{run}: stopped before the upstream command ran "
                       f"(exit {code})")  # fmt: skip
    if not data["upstream_ok"]:
        failed = f"finished, but the upstream command failed (exit {data.get('upstream_exit')})"
        return Finding("last update", False, f"{run}: {failed}")
    if code != 0:
        return Finding("last update", False, f"{run}: finished with exit {code}")
    return Finding("last update", True, f"{run}: finished")


def receipt_finding(install: Install, receipts: Receipts | None = None) -> Finding:
    """From the newest Hermes update receipt: its outcome and what happened to local changes.

    Receipts from every home and profile home count; the newest is the one that ran last by
    its own instants. A receipt that could not be read is named in the details; when it may
    be the newest one, the last update could not be checked, and that is not ok.
    """
    if receipts is None:
        receipts = install_receipts(install.path)
    latest = receipts.newest
    unreadable = receipts.skipped_after(latest)
    notes = [skipped.note for skipped in receipts.skipped]
    if unreadable:
        newest = unreadable[-1]
        summary = f"could not check: receipt {newest.path.name} is unreadable ({newest.reason})"
        return Finding("last update", False, summary, notes)
    if latest is None:
        return Finding("last update", True, "no update recorded (no patchkeeper run, no receipt)")
    stash = latest.stash_step
    ok = latest.outcome == "success" and (stash is None or stash.get("ok") is True)
    where = f" (profile {latest.profile})" if latest.profile else ""
    summary = f"hermes update{where} at {latest.started_at or '?'}: outcome {latest.outcome}"
    details = [f"receipt {latest.path}"]
    if stash is not None:
        summary += f", local changes {latest.stash_outcome}"
        details.append(f"{STASH_STEP}: {latest.stash_detail}")
    return Finding("last update", ok, summary, details + notes)


def last_update_finding(install: Install) -> Finding:
    """The update that ran last: patchkeeper's own run, or a Hermes update after it.

    An unfinished patchkeeper run always answers. Otherwise the receipts a run's own
    `hermes update` wrote belong to that run (its journal already judged them), and a receipt
    from after the run ended (someone ran `hermes update` by hand, a timer did) is newer news:
    it answers, so a later `parked` is never hidden behind an older "finished".
    """
    unfinished = _unfinished_finding(install)
    if unfinished is not None:
        return unfinished
    receipts = install_receipts(install.path)
    last_run = _last_run(install)
    if last_run is None or receipts.newer_than(last_run[1]):
        return receipt_finding(install, receipts)
    return _journal_finding(last_run[0])


# ---------------------------------------------------------------- the fire-claim symptom


def cron_home(install: Install) -> Path:
    """The Hermes home whose cron ledger the install writes: HERMES_HOME, else the install's
    parent (the installer puts the checkout at ~/.hermes/hermes-agent)."""
    configured = os.environ.get("HERMES_HOME", "").strip()
    return Path(configured).expanduser() if configured else install.path.parent


def fire_claim_finding(install: Install) -> Finding:
    """Runs booked failed as "fire claim ownership lost" whose delivery succeeded: the symptom
    heartbeat-fence fixes. Read only, by audit's own check (`delivered_but_booked_lost`)."""
    from patchkeeper.proof import audit

    home = cron_home(install)
    if not (home / audit.LEDGER_PATH).is_file():
        return Finding("fire claims", True, f"no cron ledger in {home}: nothing to read")
    found = audit.audit(home)
    if audit.Check.DELIVERED_BUT_LOST not in found.checked:
        why = [
            u.reason for u in found.unchecked if u.check in (None, audit.Check.DELIVERED_BUT_LOST)
        ]
        summary = f"not checked in {home}: {'; '.join(why) or 'no delivery record to compare'}"
        return Finding("fire claims", True, summary)
    lost = found.delivered_but_lost
    if not lost:
        summary = (
            f"no delivered run booked as a lost fire claim ({found.ownership_lost} booked lost)"
        )
        return Finding("fire claims", True, summary)
    summary = (
        f'{len(lost)} run(s) delivered yet booked failed as "fire claim ownership lost": the '
        "heartbeat waited on the fence its own run held; patch heartbeat-fence fixes it "
        "(`patchkeeper audit` lists them)"
    )
    details = [
        f"{item.execution_id} (job {item.job_name or item.job_id}): {item.error}" for item in lost
    ]
    return Finding("fire claims", False, summary, details[:5])


# ---------------------------------------------------------------- all together


def _guarded(name: str, check: Callable[[], Finding]) -> Finding:
    """A finding whose check hit an error says so and is not ok."""
    try:
        return check()
    except PatchkeeperError as exc:
        return Finding(name, False, f"could not check: {exc}")


def _settings(patch_dir: Path, problems: list[str]) -> Settings:
    try:
        return load_settings(patch_dir)
    except UserError as exc:
        problems.append(str(exc))
        return Settings(source=None, install_path=Path(DEFAULT_INSTALL).expanduser())


def diagnose(install_path: Path | None, patch_dir: Path, reason: str = "") -> DoctorReport:
    """REASON: why this patch set (remembered.Choice), named in the patch set finding."""
    patch_set, lint = inspect_patch_set(patch_dir)
    problems = [str(p) for p in [*lint, *dangling_smoke(patch_set)]]
    settings = _settings(patch_set.root, problems)
    where = (install_path or settings.install_path).expanduser()
    findings: list[Finding] = []
    try:
        install = open_install(where)
    except UserError as exc:
        findings.append(Finding("install", False, str(exc)))
        findings.append(lint_finding(patch_set, problems, reason))
        return DoctorReport(where, findings)
    context = _Context(settings, patch_set, install)
    patches: list[PatchResult] = []
    findings += [
        _guarded("install", lambda: install_finding(install, settings)),
        _guarded("interpreter", lambda: interpreter_finding(install, settings)),
        _guarded("git state", lambda: git_state_finding(install, patch_set)),
        lint_finding(patch_set, problems, reason),
        _guarded("patches", lambda: patches_finding(context, patches)),
        _guarded("timeout budget", lambda: budget_finding(context)),
        _guarded("last update", lambda: last_update_finding(install)),
        _guarded("fire claims", lambda: fire_claim_finding(install)),
    ]
    return DoctorReport(install.path, findings, patches)
