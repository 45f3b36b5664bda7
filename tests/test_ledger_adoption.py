"""The ledger adoption smoke check against the practice upstream: real processes, real SQLite.

Three full runs (each holds the ledger's write lock for 7 s): unpatched, patched, and patched
with a wrong fix (one that retries everything). The others stop before the stall.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import run_cli

from patchkeeper.demo.sandbox import Sandbox
from patchkeeper.engine.patching import apply_patches
from patchkeeper.install.checkout.install import open_install
from patchkeeper.patchset.bundled import bundled_patches
from patchkeeper.patchset.load import load_patch_set
from patchkeeper.patchset.settings import load_settings
from patchkeeper.proof.smoke import one_check
from patchkeeper.proof.smoke.for_patches import (
    checks_for_patches,
    run_for_patches,
    unfixed_results,
)
from patchkeeper.proof.smoke.interpreter import Interpreter
from patchkeeper.proof.smoke.results import ERROR, FAIL, PASS, CheckResult

CHECK = bundled_patches() / "smoke" / "ledger_adoption.py"
STEPS = ("1 happy path", "2 compare-and-set", "3 lock stall", "4 error classification")
SCHEMA_STEPS = ("1 schema once", "2 ledger emptied, recreated")  # ledger_schema.py's


@pytest.fixture
def ledger_sandbox(sandbox: Sandbox) -> Sandbox:
    """The sandbox, its patch set carrying the bundled check (one check for both upstreams)."""
    shutil.copy2(CHECK, sandbox.patches / "smoke" / "ledger_adoption.py")
    return sandbox


def run_check(sandbox: Sandbox) -> CheckResult:
    python = Interpreter(Path(sys.executable))
    path = sandbox.patches / "smoke" / "ledger_adoption.py"
    return one_check.run_check(python, sandbox.install, path, timeout=90)


def verdicts(result: CheckResult) -> dict[str, str]:
    return {s.name: s.verdict for s in result.steps}


def edit(sandbox: Sandbox, path: str, old: str, new: str) -> None:
    target = sandbox.install / path
    text = target.read_text()
    assert old in text, f"{path} no longer holds {old!r}"
    target.write_text(text.replace(old, new))


def test_unpatched_the_stall_loses_the_hand_off_and_the_schema_reruns(
    ledger_sandbox: Sandbox,
) -> None:
    proc = run_cli("smoke", "--install", ledger_sandbox.install, "--patches",
                   ledger_sandbox.patches, "--json")  # fmt: skip
    assert proc.returncode == 4, proc.stderr
    checks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["fire_claim_heartbeat"]["verdict"] == "pass"  # 0.21.3 has upstream's fix
    check = checks["ledger_adoption"]
    steps = {s["name"]: s for s in check["steps"]}
    assert [s["verdict"] for s in check["steps"]] == ["pass", "pass", "fail", "pass"]
    assert check["verdict"] == "fail"
    schema = checks["ledger_schema"]  # schema-once's own proof, its own verdict
    assert [s["verdict"] for s in schema["steps"]] == ["fail", "pass"]
    assert schema["steps"][0]["detail"].startswith("schema ran in 20 of 20 ledger calls")
    stall = steps["3 lock stall"]["detail"]
    assert "OperationalError: database is locked after 5." in stall
    assert "the hand-off is lost" in stall
    classified = steps["4 error classification"]["detail"]
    assert "corrupt file: raised at once" in classified
    assert "drifted table: raised at once" in classified
    facts = check["extra"]
    assert facts["busy_timeout_seconds"] == 5.0 and facts["hold_seconds"] == 7.0
    assert facts["grace_seconds"] == 30.0
    assert facts["worker_path"].endswith("(one attempt)")
    assert facts["latency_happy_path_seconds"] < 2
    assert 4.5 < facts["latency_lock_stall_seconds"] < 6.5  # one busy timeout, then dead
    assert not list(ledger_sandbox.home.iterdir())  # the sandbox's own HERMES_HOME untouched


def test_patched_every_step_passes(ledger_sandbox: Sandbox) -> None:
    patch_set = load_patch_set(ledger_sandbox.patches)
    settings = load_settings(ledger_sandbox.patches)
    install = open_install(ledger_sandbox.install)
    applied = apply_patches(install, settings, patch_set)
    progress: list[tuple[str, str]] = []
    report = run_for_patches(
        install, settings, patch_set, applied.results, lambda n, t: progress.append((n, t))
    )
    results = {r.name: r for r in report.results}
    # heartbeat-fence is upstream's at 0.21.3 (its probe, no variant for it): its check
    # still proves upstream's own fix
    assert list(results) == ["ledger_adoption", "ledger_schema", "fire_claim_heartbeat"]
    assert results["fire_claim_heartbeat"].verdict == PASS
    assert report.exit_code == 0, report.results
    result = results["ledger_adoption"]
    assert verdicts(result) == dict.fromkeys(STEPS, "pass")
    assert verdicts(results["ledger_schema"]) == dict.fromkeys(SCHEMA_STEPS, "pass")
    assert result.extra["worker_path"].endswith("-> adopt_while_busy (cron.adoption_busy_retry)")
    stall = result.extra["latency_lock_stall_seconds"]
    assert 5.5 < stall < result.extra["grace_seconds"]  # past one busy timeout, then adopted
    assert "2 call(s)" in next(s.detail for s in result.steps if s.name == "3 lock stall")
    assert results["ledger_schema"].steps[0].detail.startswith("schema ran in 1 of 20")
    assert ("ledger_adoption", "3 lock stall: pass") in [(n, t.split(" (")[0]) for n, t in progress]
    assert all(step.seconds is not None for step in result.steps)


def test_a_fix_that_retries_by_exception_class_fails_compare_and_set_and_classification(
    ledger_sandbox: Sandbox,
) -> None:
    """A wrong fix: retry any OperationalError, and a refusal, three times. It survives the
    stall, yet retries a refused claim and a non-busy error, and the check says so."""
    edit(
        ledger_sandbox,
        "cron/scheduler.py",
        "            if adopt_claimed_execution(execution_id) is None:\n",
        "            import sqlite3\n"
        "            for attempt in range(3):\n"
        "                try:\n"
        "                    adopted = adopt_claimed_execution(execution_id)\n"
        "                except sqlite3.OperationalError:\n"
        "                    if attempt == 2:\n"
        "                        raise\n"
        "                    time.sleep(0.1)\n"
        "                    continue\n"
        "                if adopted is not None:\n"
        "                    break\n"
        "                time.sleep(0.1)\n"
        "            if adopted is None:\n",
    )
    result = run_check(ledger_sandbox)
    assert verdicts(result) == {
        "1 happy path": "pass",
        "2 compare-and-set": "fail",
        "3 lock stall": "pass",
        "4 error classification": "fail",
    }
    details = {s.name: s.detail for s in result.steps}
    assert details["2 compare-and-set"] == "a refusal was retried (3 adoption calls)"
    assert details["4 error classification"].startswith(
        "drifted table: a non-busy error was retried (3 calls in "
    )
    assert details["4 error classification"].endswith(
        "OperationalError: no such column: started_at"
    )


@pytest.mark.parametrize(
    ("path", "old", "new", "reason"),
    [
        ("cron/executions.py", "def adopt_claimed_execution(", "def adopt_claim(",
         "cron.executions has no adopt_claimed_execution() (upstream renamed it?)"),
        ("cron/executions.py", "import os\n", "import os\nimport no_such_module\n",
         "cannot import cron.executions: ModuleNotFoundError: No module named 'no_such_module'"),
        ("cron/scheduler.py", "import logging\n", "import logging\nimport no_such_dep\n",
         # cron/__init__.py imports the scheduler, as upstream's does: the ledger fails with it
         "cannot import cron.executions: ModuleNotFoundError: No module named 'no_such_dep'"),
    ],
)  # fmt: skip
def test_a_missing_upstream_function_is_could_not_check(
    ledger_sandbox: Sandbox, path: str, old: str, new: str, reason: str
) -> None:
    edit(ledger_sandbox, path, old, new)
    result = run_check(ledger_sandbox)
    assert result.verdict == ERROR
    assert [(s.name, s.verdict, s.detail) for s in result.steps] == [("setup", "error", reason)]


def test_a_gateway_wait_shorter_than_the_stall_loses_the_hand_off(ledger_sandbox: Sandbox) -> None:
    """The wait is measured by running the launcher (here it waits the grace, 6 s)."""
    edit(ledger_sandbox, "cron/executions.py", "GRACE_SECONDS = 30.0", "GRACE_SECONDS = 6.0")
    result = run_check(ledger_sandbox)
    assert result.verdict == FAIL
    assert result.extra["gateway_wait_seconds"] == 6.0
    stall = next(s for s in result.steps if s.name == "3 lock stall")
    assert (stall.verdict, stall.detail) == (
        "fail",
        "the gateway waits 6 s for the ack: a write lock held past the 5 s busy timeout (7 s) "
        "loses the hand-off whatever the worker does",
    )
    assert verdicts(result)["1 happy path"] == "pass"


def test_the_older_launcher_generation_is_driven_and_judged(tmp_path: Path) -> None:
    """A 0.21.2-like install: the launcher takes an argv list and waits 5 s. The check runs
    it (no TypeError, no "could not check") and fails it for what it is: a stall loses the
    hand-off. The 0.21 variant forced onto it crashes the launcher: named, never a pass."""
    from patchkeeper.demo.sandbox import build_sandbox

    old = build_sandbox(tmp_path / "old", install_tag="v2026.9.11")
    shutil.copy2(CHECK, old.patches / "smoke" / "ledger_adoption.py")
    result = run_check(old)
    assert result.verdict == FAIL, result
    assert result.extra["gateway_wait_seconds"] == 5.0
    assert verdicts(result)["1 happy path"] == "pass"
    assert verdicts(result)["3 lock stall"] == "fail"
    patch = old.patches / "adoption-retry" / "scheduler-0.21.patch"
    applied = run_cli("apply", "--install", old.install, "--patches", old.patches, "--json",
                      "--no-smoke")  # fmt: skip
    assert json.loads(applied.stdout)["patches"][0]["outcome"] == "not-applicable"
    assert subprocess.run(["git", "apply", str(patch)], cwd=old.install).returncode == 0
    forced = run_check(old)
    assert forced.verdict == ERROR
    assert [(s.name, s.detail) for s in forced.steps] == [(
        "setup",
        "the launcher failed before it spawned a worker: NameError: "
        "name 'HANDOFF_ADOPTION_GRACE_SECONDS' is not defined",
    )]  # fmt: skip


def test_the_hold_follows_the_installs_busy_timeout_through_upstream_chatter(
    ledger_sandbox: Sandbox,
) -> None:
    """Read, not assumed: a 1 s busy timeout makes a 3 s stall (and a quick run).

    Upstream code that prints on stdout (and stderr) as it imports confuses nothing.
    """
    edit(ledger_sandbox, "hermes_cli/sqlite_util.py", "busy_timeout_ms: int = 5000",
         "busy_timeout_ms: int = 1000")  # fmt: skip
    edit(ledger_sandbox, "cron/scheduler.py", "import logging\n",
         "import logging\nprint('RuntimeWarning: noise')\nprint('{}')\n"
         "import sys\nprint('warning: chatter', file=sys.stderr)\n")  # fmt: skip
    result = run_check(ledger_sandbox)
    assert result.extra["busy_timeout_seconds"] == 1.0
    assert result.extra["hold_seconds"] == 3.0
    stall = next(s for s in result.steps if s.name == "3 lock stall")
    assert stall.verdict == "fail" and "database is locked after 1." in stall.detail
    assert verdicts(result)["1 happy path"] == "pass"


def test_a_backport_that_forgets_the_gateway_hook_fails_the_stall_and_the_probe(
    ledger_sandbox: Sandbox,
) -> None:
    """The worker retries, but the launcher writes no adoption_deadline: the retry has no
    deadline to work to, the stall loses the hand-off, and the probe names the missing hook."""
    patch_set = load_patch_set(ledger_sandbox.patches)
    settings = load_settings(ledger_sandbox.patches)
    install = open_install(ledger_sandbox.install)
    apply_patches(install, settings, patch_set)
    target = ledger_sandbox.install / "cron" / "scheduler.py"
    lines = target.read_text().splitlines(keepends=True)
    hook = [line for line in lines if '"adoption_deadline": time.monotonic()' in line]
    assert len(hook) == 1, hook
    target.write_text("".join(line for line in lines if line not in hook))
    result = run_check(ledger_sandbox)
    assert result.verdict == FAIL
    assert verdicts(result)["3 lock stall"] == "fail"
    assert verdicts(result)["1 happy path"] == "pass"
    python = Interpreter(Path(sys.executable))
    path = ledger_sandbox.patches / "smoke" / "ledger_adoption.py"
    probed = one_check.run_check(python, ledger_sandbox.install, path, timeout=90, args=["--probe"])
    assert probed.verdict == FAIL
    gateway = next(s for s in probed.steps if s.name == "gateway passes its deadline")
    assert gateway.verdict == "fail"
    assert "writes no adoption_deadline" in gateway.detail


def test_on_0_21_2_the_unfixed_path_fails_the_run_and_schema_once_is_proven(
    tmp_path: Path,
) -> None:
    """adoption-retry has no variant before 0.21.3, yet the hand-off path is there and broken:
    apply is never green and says why; schema-once's own check passes, so it is not blamed."""
    from patchkeeper.demo.sandbox import build_sandbox

    old = build_sandbox(tmp_path / "old", install_tag="v2026.9.11")
    proc = run_cli("apply", "--install", old.install, "--patches", old.patches, "--json")
    assert proc.returncode == 4, proc.stdout
    doc = json.loads(proc.stdout)
    outcomes = {p["name"]: p["outcome"] for p in doc["patches"]}
    assert outcomes == {
        "adoption-retry": "not-applicable",
        "schema-once": "applied-offset",
        "heartbeat-fence": "applied-offset",
    }
    verdicts_seen = {c["name"]: c["verdict"] for c in doc["smoke"]["checks"]}
    assert verdicts_seen == {
        "ledger_adoption": "fail",
        "ledger_schema": "pass",
        "fire_claim_heartbeat": "pass",
    }
    assert not [n for n in doc["notes"] if "not proven" in n]
    (unfixed,) = [n for n in doc["notes"] if n.startswith("adoption-retry ")]
    assert unfixed.startswith(
        "adoption-retry has no fix for this release (its variants are for >=0.21.3), and its "
        "check ledger_adoption failed: 3 lock stall: the gateway waits 5 s for the ack"
    )
    assert unfixed.endswith("no worker fix fits in it, update Hermes to 0.21.3 first")
    # Again: nothing is written now, yet the unfixed path is as broken: still never green.
    again = run_cli("apply", "--install", old.install, "--patches", old.patches, "--json")
    assert again.returncode == 4, again.stdout
    doc = json.loads(again.stdout)
    assert {c["name"]: c["verdict"] for c in doc["smoke"]["checks"]} == {"ledger_adoption": "fail"}
    assert [n for n in doc["notes"] if n.startswith("adoption-retry has no fix for this release")]


def test_a_release_past_every_variant_runs_no_check_for_it(sandbox: Sandbox) -> None:
    """Only an install older than every variant is 'unfixed': past every range, the patch is
    retired by range and its check is not run."""
    from packaging.version import Version

    from patchkeeper.model.outcomes import PatchResult

    retry = sandbox.patches / "adoption-retry" / "scheduler-0.21.patch"
    retry.write_text(
        retry.read_text().replace("Applies-To: >=0.21.3\n", "Applies-To: >=0.21.3,<0.22\n")
    )
    patch_set = load_patch_set(sandbox.patches)
    settings = load_settings(sandbox.patches)
    results = [PatchResult("adoption-retry", "not-applicable")]
    older = checks_for_patches(patch_set, settings, results, Version("0.21.2"))
    newer = checks_for_patches(patch_set, settings, results, Version("0.23.0"))
    assert (older, newer) == (["ledger_adoption"], [])


@pytest.mark.parametrize(
    ("applies_to", "version", "unfixed"),
    [
        ("~=0.21.3", "0.21.2", True),  # a compatible release starts at 0.21.3
        ("==0.22.*", "0.21.5", True),  # a prefix match starts at 0.22
        ("==0.22.*", "0.23.0", False),  # past it: retired by range, not unfixed
        (">0.21.2", "0.21.2", True),
        ("<0.22", "0.21.0", False),  # no lower bound: never "older than every variant"
    ],
)
def test_any_lower_bound_makes_an_older_release_unfixed(
    sandbox: Sandbox, applies_to: str, version: str, unfixed: bool
) -> None:
    """Older than every variant is read from each range's lower bound, whatever operator
    gives it (variant_overlap's bounds), not from `>=` and `>` alone."""
    from packaging.version import Version

    from patchkeeper.model.outcomes import PatchResult

    for retry in (sandbox.patches / "adoption-retry").glob("*.patch"):  # every shape's
        retry.write_text(
            retry.read_text().replace("Applies-To: >=0.21.3\n", f"Applies-To: {applies_to}\n")
        )
    patch_set = load_patch_set(sandbox.patches)
    results = [PatchResult("adoption-retry", "not-applicable")]
    found = unfixed_results(patch_set, results, Version(version))
    assert [r.name for r in found] == (["adoption-retry"] if unfixed else [])


def test_the_smoke_run_takes_the_version_apply_already_has(sandbox: Sandbox) -> None:
    """run_for_patches given the version apply_patches worked out runs version_command no
    second time (it may be slow, or answer differently); without it, it still works it out."""
    counter = sandbox.root / "version-runs"
    config = sandbox.patches / "patchkeeper.toml"
    command = json.dumps(["sh", "-c", f"echo run >> {counter}; echo 0.21.3"])
    text = config.read_text()  # the version command is the only version source
    sources, tags = text.index("[[install.version_source]]"), text.index("[tags]")
    config.write_text(text[:sources] + f"version_command = {command}\n\n" + text[tags:])
    for variant in (sandbox.patches / "adoption-retry").glob("*.patch"):  # for 0.22 on: unfixed
        variant.write_text(
            variant.read_text().replace("Applies-To: >=0.21.3\n", "Applies-To: >=0.22\n")
        )
    (sandbox.patches / "smoke" / "ledger_adoption.py").write_text(
        "import json\nprint(json.dumps({'check': 'ledger_adoption', 'verdict': 'pass'}))\n"
    )
    patch_set, settings = load_patch_set(sandbox.patches), load_settings(sandbox.patches)
    install = open_install(sandbox.install)
    applied = apply_patches(install, settings, patch_set)
    assert counter.read_text().count("run") == 1
    given = run_for_patches(install, settings, patch_set, applied.results,
                                  version=applied.version)  # fmt: skip
    assert counter.read_text().count("run") == 1  # not run again
    assert "ledger_adoption" in [r.name for r in given.results]  # unfixed at 0.21.3: it ran
    run_for_patches(install, settings, patch_set, applied.results)
    assert counter.read_text().count("run") == 2  # the old path still works it out
