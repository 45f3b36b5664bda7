"""The heartbeat-fence patch and its smoke check on a practice upstream built from scratch.

The practice upstream is the sandbox's (patchkeeper/demo/): at 0.21.2 cron/jobs.py's heartbeat
renews through the fire fence, as Hermes did before upstream PR #109310; 0.21.3 fixes it
upstream's way. The patch set is the bundled patch file and smoke check, alone. Real git
repositories, real subprocesses, real threads and locks in the check.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from patchkeeper.demo.sandbox import Sandbox
from patchkeeper.patchset.bundled import bundled_patches
from patchkeeper.proof.smoke.interpreter import Interpreter
from patchkeeper.proof.smoke.one_check import run_check
from patchkeeper.proof.smoke.results import CheckResult
from tests.helpers import git, outcomes, run_cli, run_json, tree_snapshot

PATCH = "heartbeat-fence.patch"
CHECK = "fire_claim_heartbeat.py"
PLUMBING = "ledger_adoption.py"  # step() and overall(), imported by the check
STEPS = ("1 same owner under the fence", "2 other owner refused", "3 unreadable store not lost")
PROBE = "cron/jobs.py::heartbeat_fire_claim contains 'return _with_job(job_id, apply, False)'"


@pytest.fixture
def upstream(sandbox: Sandbox) -> Path:
    """The sandbox's install at v2026.9.11 (checked out), every later release tag fetched."""
    sandbox.fetch_tags()
    git(sandbox.install, "checkout", "-q", "v2026.9.11")
    return sandbox.install


@pytest.fixture
def patches(tmp_path: Path) -> Path:
    """The bundled heartbeat-fence patch and its check, run with this interpreter. The check
    imports its verdict plumbing from ledger_adoption.py, beside it in smoke/."""
    root = tmp_path / "patches"
    (root / "smoke").mkdir(parents=True)
    shutil.copy2(bundled_patches() / PATCH, root / PATCH)
    for name in (CHECK, PLUMBING):
        shutil.copy2(bundled_patches() / "smoke" / name, root / "smoke" / name)
    (root / "series").write_text(f"{PATCH}\n")
    settings = f'version_file = "hermes_cli/__init__.py"\npython = {json.dumps(sys.executable)}\n'
    (root / "patchkeeper.toml").write_text(f"[install]\n{settings}")
    return root


def smoke(install: Path, patches: Path) -> tuple[int, dict[str, Any]]:
    proc = run_cli("smoke", "--install", install, "--patches", patches, "--json",
                   "--check", CHECK.removesuffix(".py"))  # fmt: skip
    assert proc.stdout, proc.stderr
    (check,) = json.loads(proc.stdout)["checks"]
    return proc.returncode, check


def steps(check: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {s["name"]: (s["verdict"], s["detail"]) for s in check["steps"]}


def edit(install: Path, old: str, new: str) -> None:
    target = install / "cron" / "jobs.py"
    text = target.read_text()
    assert text.count(old) == 1, f"cron/jobs.py no longer holds {old!r} once"
    target.write_text(text.replace(old, new))


def test_check_carries_it_before_the_fix_and_retires_it_by_content_after(
    upstream: Path, patches: Path
) -> None:
    code, doc = run_json(
        "check", "--install", upstream, "--patches", patches, "--ref", "v2026.9.11",
        "--ref", "v2026.9.14",
    )  # fmt: skip
    assert code == 0
    by_ref = {t["ref"]: t["patches"][0] for t in doc["targets"]}
    assert {ref: p["outcome"] for ref, p in by_ref.items()} == {
        "v2026.9.11": "applied-offset",  # the practice file is shorter than Hermes
        "v2026.9.14": "upstream-has-it",
    }
    assert PROBE in by_ref["v2026.9.14"]["detail"]


def test_without_the_fix_the_check_fails_naming_the_refusal_and_the_unchanged_owner(
    upstream: Path, patches: Path
) -> None:
    code, check = smoke(upstream, patches)
    assert (code, check["verdict"]) == (4, "fail")
    seen = steps(check)
    assert [seen[name][0] for name in STEPS] == ["fail", "pass", "pass"]
    refused = seen[STEPS[0]][1]
    assert "refused while the run held the fire fence (answered False after " in refused
    assert "the fence's wait being 0.5 s" in refused
    assert "the claim's owner had not changed" in refused
    facts = check["extra"]
    assert (facts["fence_wait_install_seconds"], facts["fence_wait_check_seconds"]) == (30.0, 0.5)


def test_applied_the_same_owner_renews_under_the_fence_and_others_are_refused(
    upstream: Path, patches: Path
) -> None:
    code, doc = run_json("apply", "--install", upstream, "--patches", patches)
    assert (code, outcomes(doc)) == (0, {"heartbeat-fence": "applied-offset"})
    code, check = smoke(upstream, patches)
    assert (code, check["verdict"]) == (0, "pass"), check
    seen = steps(check)
    assert seen[STEPS[0]][1].startswith("renewed while the run held the fire fence")
    assert seen[STEPS[1]][1].startswith("refused (answered False")
    assert "raised FireClaimUnverified" in seen[STEPS[2]][1]
    assert "this is not an ownership loss" in seen[STEPS[2]][1]


def test_the_fixed_release_needs_nothing_and_its_own_code_passes(
    upstream: Path, patches: Path
) -> None:
    git(upstream, "checkout", "-q", "v2026.9.14")
    before = tree_snapshot(upstream)
    code, doc = run_json("apply", "--install", upstream, "--patches", patches)
    assert (code, outcomes(doc)) == (0, {"heartbeat-fence": "upstream-has-it"})
    assert tree_snapshot(upstream) == before
    code, check = smoke(upstream, patches)
    assert (code, check["verdict"]) == (0, "pass"), check
    assert "raised RuntimeError" in steps(check)[STEPS[2]][1]  # upstream's own answer


def test_a_fix_that_drops_the_owner_check_fails_the_refusal(upstream: Path, patches: Path) -> None:
    edit(
        upstream,
        "    return _under_fire_fence(job_id, lambda: _with_job(job_id, apply, False))\n\n\n#",
        "    return True\n\n\n#",
    )
    code, check = smoke(upstream, patches)
    assert (code, check["verdict"]) == (4, "fail")
    verdict, detail = steps(check)[STEPS[1]]
    assert (verdict, detail) == (
        "fail",
        "the heartbeat for another owner was not refused: answered True after "
        + detail.split("answered True after ")[1],
    )


def test_a_fix_that_calls_an_unreadable_store_lost_fails(upstream: Path, patches: Path) -> None:
    """Swallowing the store error into False is the very conflation the fix is about."""
    edit(
        upstream,
        "    return _under_fire_fence(job_id, lambda: _with_job(job_id, apply, False))\n\n\n#",
        "    try:\n        return _with_job(job_id, apply, False)\n"
        "    except RuntimeError:\n        return False\n\n\n#",
    )
    code, check = smoke(upstream, patches)
    assert (code, check["verdict"]) == (4, "fail")
    seen = steps(check)
    assert [seen[name][0] for name in STEPS] == ["pass", "pass", "fail"]
    assert "could not verify is not ownership lost" in seen[STEPS[2]][1]


def test_a_path_that_cannot_be_driven_is_an_error(upstream: Path, patches: Path) -> None:
    edit(upstream, "def fire_claim_fence(", "def fire_claim_fence_renamed(")
    code, check = smoke(upstream, patches)
    assert (code, check["verdict"]) == (4, "error")
    why = check["steps"][0]["detail"]
    assert why == "cron.jobs has no fire_claim_fence() (upstream renamed it?)"


def _renewal_module(upstream: Path, patches: Path) -> Any:
    code, _doc = run_json("apply", "--install", upstream, "--patches", patches)
    assert code == 0
    path = upstream / "cron" / "fire_claim_renewal.py"
    spec = importlib.util.spec_from_file_location("fire_claim_renewal_under_test", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_only_a_refusal_is_false_and_an_unknown_answer_raises(
    upstream: Path, patches: Path
) -> None:
    renewal = _renewal_module(upstream, patches)
    assert renewal.renew_outside_fire_fence("j", lambda: True) is True
    assert renewal.renew_outside_fire_fence("j", lambda: False) is False
    with pytest.raises(renewal.FireClaimUnverified, match="no yes/no answer"):
        renewal.renew_outside_fire_fence("j", lambda: None)  # a lock that was not taken

    def broken() -> bool:
        raise OSError("store unavailable")

    with pytest.raises(renewal.FireClaimUnverified, match="OSError: store unavailable") as caught:
        renewal.renew_outside_fire_fence("j", broken)
    assert isinstance(caught.value.__cause__, OSError)


def probe(install: Path, patches: Path) -> CheckResult:
    python = Interpreter(Path(sys.executable))
    path = patches / "smoke" / CHECK
    return run_check(python, install, path, timeout=60, args=("--probe",))


def test_the_probe_reads_that_the_heartbeat_waits_on_the_fence(
    upstream: Path, patches: Path
) -> None:
    before = tree_snapshot(upstream)
    found = probe(upstream, patches)
    assert found.verdict == "fail"
    [step] = found.steps
    assert step.detail == (
        "heartbeat_fire_claim calls _under_fire_fence: it waits on the fire fence its own run "
        'holds across delivery, so a delivery longer than 30 s is booked "fire claim ownership '
        'lost" (patch heartbeat-fence)'
    )
    assert found.extra["fence_wait_seconds"] == 30.0
    assert tree_snapshot(upstream) == before  # a probe only reads


@pytest.mark.parametrize("where", ["patched", "fixed release"])
def test_the_probe_passes_a_heartbeat_that_takes_no_fence(
    upstream: Path, patches: Path, where: str
) -> None:
    if where == "patched":
        code, _doc = run_json("apply", "--install", upstream, "--patches", patches)
        assert code == 0
    else:
        git(upstream, "checkout", "-q", "v2026.9.14")  # its docstring names the fence: not a call
    found = probe(upstream, patches)
    assert (found.verdict, found.steps[0].detail) == (
        "pass",
        "heartbeat_fire_claim takes no fire fence: a slow delivery cannot starve it",
    )


def test_the_probe_finds_no_budget_where_there_is_no_heartbeat(
    upstream: Path, patches: Path
) -> None:
    edit(upstream, "def heartbeat_fire_claim(", "def renew_claim_elsewhere(")
    found = probe(upstream, patches)
    assert (found.verdict, found.steps[0].detail) == (
        "pass",
        "this install has no cron.jobs.heartbeat_fire_claim: no heartbeat waits on a fence",
    )
    code, check = smoke(upstream, patches)  # the full check cannot drive the path there
    assert (code, check["verdict"]) == (4, "error")
