"""The practice upstream's restructured worker: a main-channel commit past 0.21.5, shaped like
upstream's `cron/scheduler.py` at 5a1920c7 (the try moved up, plugins and config hooks first,
the ack written then renamed; the launcher captures the worker's stderr and marks it), still
adopting once and passing no deadline: the bug of #135487, in a shape the 0.21 variant of
adoption-retry only partly fits.

The patch facts are checked with plain git, as tests/test_sandbox.py does.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from patchkeeper.demo.history import MAIN_COMMITS, RESTRUCTURED_WORKER, TAG_OF
from patchkeeper.demo.sandbox import Sandbox
from patchkeeper.patchset.bundled import bundled_patches

ADOPTION = bundled_patches() / "adoption-retry" / "scheduler-0.21.patch"
RESTRUCTURED = bundled_patches() / "adoption-retry" / "scheduler-restructured.patch"
BRANCH = RESTRUCTURED_WORKER.branch


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True,
        env={**os.environ, "LC_ALL": "C", **(env or {})}, check=False,
    )  # fmt: skip


def out(repo: Path, *args: str) -> str:
    proc = git(repo, *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def scheduler(sandbox: Sandbox) -> str:
    return out(sandbox.origin, "show", f"refs/heads/{BRANCH}:cron/scheduler.py")


def function(text: str, name: str) -> str:
    """The top-level `def NAME` of TEXT, up to the next top-level line."""
    start = text.index(f"\ndef {name}(")
    end = re.search(r"\n(?=[^\s)])", text[start + 1 :])
    return text[start : start + 1 + end.start()] if end else text[start:]


def single_hunks(patch: Path, path: str) -> list[str]:
    """PATCH's hunks of PATH, each as a patch of its own."""
    text = patch.read_text(encoding="utf-8")
    section = text[text.index(f"diff --git a/{path} b/{path}") :]
    following = section.find("\ndiff --git ", 1)
    section = section if following < 0 else section[: following + 1]
    head, *hunks = re.split(r"(?m)^(?=@@ )", section)
    return [head + hunk for hunk in hunks]


def test_it_is_a_commit_on_main_past_0_21_5_that_no_release_carries(sandbox: Sandbox) -> None:
    assert MAIN_COMMITS == {BRANCH: RESTRUCTURED_WORKER}
    base = out(sandbox.origin, "rev-parse", f"{TAG_OF['0.21.5']}^{{commit}}")
    assert out(sandbox.origin, "rev-parse", f"refs/heads/{BRANCH}^") == base
    later = out(sandbox.origin, "rev-parse", f"{TAG_OF['0.22.0']}^{{commit}}")
    assert git(sandbox.origin, "merge-base", "--is-ancestor", BRANCH, later).returncode == 1
    assert sandbox.publish("0.21.5+1") == BRANCH
    assert (sandbox.published(), sandbox.next_release()) == (BRANCH, TAG_OF["0.22.0"])


def test_the_worker_and_launcher_are_restructured_and_still_adopt_once(sandbox: Sandbox) -> None:
    text = scheduler(sandbox)
    worker = function(text, "_run_external_worker_payload")
    steps = [
        "    home_token = secret_token = None\n    try:\n",  # the try moved up
        "hydrate_profile_secret_sources(profile_home)",
        "_discover_worker_plugins(profile_home)",
        "set_secret_scope(",
        "_register_worker_config_hooks(profile_home)",
        "adopt_claimed_execution(execution_id)",
        "partial.write_text(",
        "os.replace(partial, ack_path)",  # the ack is published whole
        "return run_one_job(",
    ]
    at = [worker.index(step) for step in steps]
    assert at == sorted(at)
    assert worker.count("adopt_claimed_execution(") == 1 and "retry" not in worker
    launcher = function(text, "_launch_external_cron_worker")
    assert "stderr=stderr_file" in launcher and "WORKER_MARKER: execution_id" in launcher
    assert "adoption_deadline" not in text


def hunks_that_apply(sandbox: Sandbox, scratch: Path, ref: str, patch: Path) -> list[bool]:
    """For each of PATCH's hunks of cron/scheduler.py: does it apply to REF's tree alone?"""
    env = {"GIT_INDEX_FILE": str(scratch / f"index-{patch.stem}")}
    assert git(sandbox.origin, "read-tree", ref, env=env).returncode == 0
    applies = []
    for n, hunk in enumerate(single_hunks(patch, "cron/scheduler.py")):
        (scratch / f"{patch.stem}-{n}.patch").write_text(hunk, encoding="utf-8")
        check = ["apply", "--cached", "--check", str(scratch / f"{patch.stem}-{n}.patch")]
        applies.append(git(sandbox.origin, *check, env=env).returncode == 0)
    return applies


def test_each_variant_of_adoption_retry_fits_its_own_shape_only(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The 0.21 variant keeps its launcher and import hunks here and loses the worker's, as
    on the real file; the variant written on the real restructured worker fits here whole
    (its hunks are the launcher's payload, the import block up to the moved-up try, the
    adoption) and not on 0.21.5, whose import block runs into no try."""
    here, before = f"refs/heads/{BRANCH}", TAG_OF["0.21.5"]
    assert hunks_that_apply(sandbox, tmp_path, here, ADOPTION) == [True, True, False]
    assert hunks_that_apply(sandbox, tmp_path, here, RESTRUCTURED) == [True, True, True]
    assert hunks_that_apply(sandbox, tmp_path, before, RESTRUCTURED) == [True, False, True]
    assert hunks_that_apply(sandbox, tmp_path, before, ADOPTION) == [True, True, True]


def test_a_main_channel_install_of_it_reads_base_plus_one_and_loses_a_stalled_hand_off(
    sandbox: Sandbox,
) -> None:
    sandbox.publish(BRANCH)
    update = subprocess.run(
        ["./hermes", "update", "--yes"], cwd=sandbox.install, env=sandbox.hermes_env(),
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert update.returncode == 0, update.stderr
    head = out(sandbox.install, "rev-parse", "--short=7", "HEAD")
    version = subprocess.run(
        ["./hermes", "--version"], cwd=sandbox.install, capture_output=True, text=True,
        check=True,
    ).stdout.strip()  # fmt: skip
    assert version == f"Hermes Agent v0.21.5+1.g{head} (2026.9.27)"
    smoke = subprocess.run(
        [sys.executable, "-m", "patchkeeper", "smoke", "--install", str(sandbox.install),
         "--patches", str(sandbox.patches), "--check", "ledger_adoption", "--json"],
        capture_output=True, text=True, env=sandbox.hermes_env(), check=False,
    )  # fmt: skip
    assert smoke.returncode == 4, smoke.stderr
    [check] = json.loads(smoke.stdout)["checks"]
    assert check["verdict"] == "fail"
    assert "1 call(s)" in check["detail"] and "carries no adoption_deadline" in check["detail"]


def test_update_to_it_chooses_the_restructured_variant_by_content_and_smoke_passes(
    sandbox: Sandbox,
) -> None:
    """What an operator on the main channel meets: 0.21.3 with both ledger fixes, then
    `patchkeeper update` to 0.21.5+1 with its restructured worker: the variant that fits is
    chosen by content and said so, both fixes are in, the stalled hand-off survives, exit 0."""
    args = ["--install", str(sandbox.install), "--patches", str(sandbox.patches)]

    def pk(*words: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "patchkeeper", *words, *args, "--json"],
            capture_output=True, text=True, env=sandbox.hermes_env(), check=False,
        )  # fmt: skip

    assert pk("apply").returncode == 0
    sandbox.publish("0.21.5+1")
    update = pk("update")
    assert update.returncode == 0, update.stdout[-2000:] + update.stderr[-2000:]
    document = json.loads(update.stdout)
    head = out(sandbox.install, "rev-parse", "--short=7", "HEAD")
    assert document["install"]["version_after"] == f"0.21.5+1.g{head}"
    outcomes = {patch["name"]: patch["outcome"] for patch in document["patches"]}
    assert outcomes["adoption-retry"] == outcomes["schema-once"] == "applied-offset"
    assert "scheduler-restructured.patch chosen by content" in update.stdout
    assert {check["name"]: check["verdict"] for check in document["smoke"]["checks"]}[
        "ledger_adoption"
    ] == "pass"
