"""The practice upstream ("sandbox"): its repositories, releases, `hermes update` and worker.

Real git, real subprocesses, real SQLite. The patch facts are checked with plain git, so they
pin the sandbox's contract independently of patchkeeper's engine.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from patchkeeper.demo.sandbox import INSTALL_TAG, TAGS, Sandbox, build_sandbox
from patchkeeper.model.errors import UserError
from patchkeeper.patchset.bundled import bundled_patches

PATCHSET = bundled_patches()  # the sandbox's patches/ is a copy of it
ADOPTION = "adoption-retry/scheduler-0.21.patch"
SCHEMA = "schema-once.patch"
HEARTBEAT = "heartbeat-fence.patch"
# Base fields name the real upstream commits the patches were written on, not sandbox shas.
REAL_BASES = {
    ADOPTION: "00067189dfecf833d4d009c2dd977ae85cf800e0",
    SCHEMA: "03165b901963a1970197cbf45ac80fd6e3e447c3",
}

# The gateway's side of a hand-off, run with the install's code: one payload per argument.
GATEWAY = """
import json, os, sys, time
from pathlib import Path
from cron.executions import create_execution, mark_execution_handoff_pending
for payload in sys.argv[1:]:
    execution_id = create_execution("practice-job", source="test")["id"]
    assert mark_execution_handoff_pending(execution_id)
    job = {"id": "practice-job", "execution_id": execution_id, "prompt": "hello"}
    Path(payload).write_text(json.dumps({  # the keys the install's own launcher writes
        "job": job,
        "profile_home": str(Path(os.environ["HERMES_HOME"]).resolve()),
        "multiplex_active": False,
        "adoption_deadline": time.monotonic() + 30,
    }))
    print(execution_id)
"""
# Another process holding the ledger's write lock: ARGV = database, seconds.
HOLD_LOCK = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
"""


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "LC_ALL": "C", **(env or {})},
        check=False,
    )


def out(repo: Path, *args: str) -> str:
    proc = git(repo, *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def commit_of(sandbox: Sandbox, tag: str) -> str:
    return out(sandbox.origin, "rev-parse", f"{tag}^{{commit}}")


def hermes(sandbox: Sandbox, *args: str) -> subprocess.CompletedProcess:
    """`./hermes ARGS` exactly as patchkeeper.toml's update command runs it."""
    return subprocess.run(
        ["./hermes", *args],
        cwd=sandbox.install,
        env=sandbox.hermes_env(),
        capture_output=True,
        text=True,
        check=False,
    )


def receipts(sandbox: Sandbox) -> list[tuple[str, dict]]:
    """Every update receipt; latest.json must repeat the newest one byte for byte."""
    folder = sandbox.home / "logs" / "update_receipts"
    found = sorted(folder.glob("update_*.json"))
    if found:
        assert (folder / "latest.json").read_bytes() == found[-1].read_bytes()
    return [(path.name, json.loads(path.read_text())) for path in found]


def header(patch: str, field: str) -> str:
    text = (PATCHSET / patch).read_text()
    match = re.search(rf"^{field}: (.+)$", text, re.MULTILINE)
    assert match, f"{patch} has no {field}"
    return match.group(1)


# ---------------------------------------------------------------- repositories


def test_origin_holds_every_release_and_main_is_at_the_install_tag(sandbox: Sandbox) -> None:
    assert out(sandbox.origin, "tag", "-l").split() == sorted(TAGS)
    assert INSTALL_TAG == "v2026.9.14"
    assert out(sandbox.origin, "rev-parse", "main") == commit_of(sandbox, "v2026.9.14")
    assert out(sandbox.origin, "rev-parse", "--is-bare-repository") == "true"


def test_install_is_a_shallow_clone_of_main_at_the_install_tag(sandbox: Sandbox) -> None:
    install = sandbox.install
    assert out(install, "rev-parse", "--is-shallow-repository") == "true"
    assert out(install, "rev-parse", "HEAD") == commit_of(sandbox, "v2026.9.14")
    assert out(install, "rev-parse", "--abbrev-ref", "HEAD@{upstream}") == "origin/main"
    assert out(install, "remote", "get-url", "origin") == sandbox.origin.as_uri()
    assert out(install, "status", "--porcelain") == ""
    assert out(install, "config", "--local", "user.email")  # `hermes update` stashes
    assert (install / "hermes").stat().st_mode & 0o111
    assert sandbox.home.is_dir() and not any(sandbox.home.iterdir())


def test_builds_are_reproducible_and_patch_bases_name_real_upstream_commits(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    again = build_sandbox(tmp_path / "again", install_tag="v2026.10.26")
    assert [commit_of(again, tag) for tag in TAGS] == [commit_of(sandbox, tag) for tag in TAGS]
    assert out(again.install, "rev-parse", "HEAD") == commit_of(sandbox, "v2026.10.26")
    sandbox_commits = {commit_of(sandbox, tag) for tag in TAGS}
    for patch, base in REAL_BASES.items():
        assert header(patch, "Base") == base
        assert base not in sandbox_commits
        assert (sandbox.patches / patch).read_bytes() == (PATCHSET / patch).read_bytes()


def test_patch_set_carries_the_bundled_smoke_checks(sandbox: Sandbox) -> None:
    checks = sorted((bundled_patches() / "smoke").glob("*.py"))
    assert [c.name for c in checks] == [
        "fire_claim_heartbeat.py", "ledger_adoption.py", "ledger_schema.py",
    ]  # fmt: skip
    for bundled in checks:
        assert (sandbox.patches / "smoke" / bundled.name).read_bytes() == bundled.read_bytes()


def test_a_copied_sandbox_points_at_itself(sandbox: Sandbox, sandbox_template: Sandbox) -> None:
    config = sandbox.config.read_text()
    assert f'path = "{sandbox.install}"' in config
    assert f'python = "{sys.executable}"' in config
    assert 'command = ["./hermes", "update", "--yes"]' in config
    assert str(sandbox_template.root) not in config
    sandbox.publish("v2026.10.1")
    assert git(sandbox.install, "fetch", "-q", "origin", "main").returncode == 0
    assert out(sandbox.install, "rev-parse", "origin/main") == commit_of(sandbox, "v2026.10.1")
    assert out(sandbox_template.origin, "rev-parse", "main") == commit_of(sandbox, "v2026.9.14")


def test_fetch_tags_brings_every_release_into_the_install(sandbox: Sandbox) -> None:
    assert out(sandbox.install, "tag", "-l").split() == ["v2026.9.14"]
    sandbox.fetch_tags()
    assert out(sandbox.install, "tag", "-l").split() == sorted(TAGS)


def test_unknown_release_and_non_empty_folder_are_refused(sandbox: Sandbox) -> None:
    with pytest.raises(UserError, match="not a sandbox release"):
        sandbox.publish("v9.9.9")
    with pytest.raises(UserError, match="not empty"):
        build_sandbox(sandbox.root)


# ---------------------------------------------------------------- patches x releases


def apply_check(
    sandbox: Sandbox, scratch: Path, tag: str, patch: str, *flags: str
) -> subprocess.CompletedProcess:
    """`git apply --cached --check FLAGS` against TAG's tree, in a scratch index."""
    env = {"GIT_INDEX_FILE": str(scratch / f"index-{tag}")}
    assert git(sandbox.origin, "read-tree", tag, env=env).returncode == 0
    return git(sandbox.origin, "apply", "--cached", *flags, str(PATCHSET / patch), env=env)


@pytest.mark.parametrize(
    ("patch", "tag", "expected"),
    [
        # git applies it at 0.21.2 (the trap of issue 14): Applies-To must leave it out
        (ADOPTION, "v2026.9.11", "offset"),
        (ADOPTION, "v2026.9.14", "offset"),  # real upstream line numbers: offset even at base
        (ADOPTION, "v2026.9.24", "offset"),
        (ADOPTION, "v2026.10.1", "offset"),
        (ADOPTION, "v2026.10.8", "conflict"),  # half-wired upstream: never upstream-has-it
        (ADOPTION, "v2026.10.26", "upstream-has-it"),
        (ADOPTION, "v2026.11.9", "upstream-has-it"),
        (SCHEMA, "v2026.9.11", "offset"),
        (SCHEMA, "v2026.9.14", "offset"),
        (SCHEMA, "v2026.9.24", "offset"),
        (SCHEMA, "v2026.10.1", "offset"),
        (SCHEMA, "v2026.10.8", "offset"),
        (SCHEMA, "v2026.10.26", "offset"),
        (SCHEMA, "v2026.11.9", "conflict"),
        (HEARTBEAT, "v2026.9.11", "offset"),  # before PR #109310: the heartbeat takes the fence
        *((HEARTBEAT, tag, "upstream-has-it") for tag in TAGS[1:]),  # the fix, by content
    ],
)
def test_practice_patch_against_release(
    sandbox: Sandbox, tmp_path: Path, patch: str, tag: str, expected: str
) -> None:
    forward = apply_check(sandbox, tmp_path, tag, patch, "--check", "-v")
    reverse = apply_check(sandbox, tmp_path, tag, patch, "--check", "--reverse")
    if expected in ("applies", "offset"):
        assert forward.returncode == 0, forward.stderr
        assert ("(offset " in forward.stderr) == (expected == "offset"), forward.stderr
    elif expected == "upstream-has-it":  # by content: every Upstream-Has line is in the tree
        assert forward.returncode != 0
        claims = upstream_has(patch)
        assert claims
        for path, scope, needle in claims:
            text = out(sandbox.origin, "show", f"{tag}:{path}")
            assert needle in (python_def(text, scope) if scope else text), (path, scope, needle)
    else:
        assert forward.returncode != 0 and reverse.returncode != 0
        # The Base is a real upstream commit (its blobs are not in the sandbox), so the 3-way
        # attempt runs on the same fix rebuilt on the previous release's blobs.
        previous = TAGS[TAGS.index(tag) - 1]
        rebuilt = rebuild_on(sandbox, tmp_path, previous, patch)
        env = {"GIT_INDEX_FILE": str(tmp_path / f"index-3way-{tag}")}
        assert git(sandbox.origin, "read-tree", tag, env=env).returncode == 0
        merged = git(sandbox.origin, "apply", "--cached", "--3way", str(rebuilt), env=env)
        assert merged.returncode != 0 and "with conflicts" in merged.stderr, merged.stderr
    if expected == "conflict" and patch == ADOPTION:  # the worker alone is wired
        for path, scope, needle in upstream_has(patch)[:2]:
            text = out(sandbox.origin, "show", f"{tag}:{path}")
            assert needle in (python_def(text, scope) if scope else text)
        launcher, needle = upstream_has(patch)[2][1:]
        scheduler = out(sandbox.origin, "show", f"{tag}:cron/scheduler.py")
        assert needle not in python_def(scheduler, launcher)


def upstream_has(patch: str) -> list[tuple[str, str, str]]:
    """The (file, scope, text) of each line of PATCH's Upstream-Has header."""
    text = (PATCHSET / patch).read_text()
    block = re.search(r"^Upstream-Has:( .+)?\n((?: .+\n)*)", text, re.MULTILINE)
    assert block, f"{patch} has no Upstream-Has"
    claims = []
    for line in (block.group(1) or "").splitlines() + block.group(2).splitlines():
        target, needle = line.strip().split(": ", 1)
        path, _, scope = target.partition("::")
        claims.append((path, scope, needle))
    return claims


def python_def(text: str, name: str) -> str:
    """The top-level `def NAME` of TEXT, up to the next top-level line (plain text search)."""
    start = text.index(f"\ndef {name}(")
    end = re.search(r"\n(?=[^\s)])", text[start + 1 :])
    return text[start : start + 1 + end.start()] if end else text[start:]


def rebuild_on(sandbox: Sandbox, scratch: Path, tag: str, patch: str) -> Path:
    """PATCH applied to TAG's tree and diffed again: the same change, with sandbox blobs."""
    env = {"GIT_INDEX_FILE": str(scratch / f"index-rebuild-{tag}")}
    assert git(sandbox.origin, "read-tree", tag, env=env).returncode == 0
    applied = git(sandbox.origin, "apply", "--cached", str(PATCHSET / patch), env=env)
    assert applied.returncode == 0, applied.stderr
    tree = git(sandbox.origin, "write-tree", env=env).stdout.strip()
    diff = git(sandbox.origin, "diff", "--full-index", f"{tag}^{{tree}}", tree)
    assert diff.returncode == 0 and diff.stdout, diff.stderr
    rebuilt = scratch / f"rebuilt-{tag}.patch"
    rebuilt.write_text(diff.stdout)
    return rebuilt


# ---------------------------------------------------------------- hermes update


def test_update_fast_forwards_a_clean_install(sandbox: Sandbox) -> None:
    sandbox.publish("v2026.10.1")
    result = hermes(sandbox, "update", "--yes")
    assert result.returncode == 0, result.stderr
    assert out(sandbox.install, "rev-parse", "HEAD") == commit_of(sandbox, "v2026.10.1")
    assert out(sandbox.install, "status", "--porcelain") == ""
    assert out(sandbox.install, "stash", "list") == ""
    [(_, receipt)] = receipts(sandbox)
    assert receipt["outcome"] == "success" and receipt["exit_code"] == 0
    assert all(step.pop("at") for step in receipt["steps"])  # when each step ran
    assert receipt["steps"] == []
    assert receipt["post_update"] == commit_of(sandbox, "v2026.10.1")


def test_update_restores_local_changes_the_release_leaves_alone(sandbox: Sandbox) -> None:
    assert git(sandbox.install, "apply", str(PATCHSET / ADOPTION)).returncode == 0
    sandbox.publish("v2026.9.24")
    result = hermes(sandbox, "update", "--yes")
    assert result.returncode == 0, result.stderr
    assert "Local changes restored" in result.stdout
    assert out(sandbox.install, "rev-parse", "HEAD") == commit_of(sandbox, "v2026.9.24")
    undo = git(sandbox.install, "apply", "--check", "--reverse", str(PATCHSET / ADOPTION))
    assert undo.returncode == 0, "the patch is no longer in the work tree"
    assert out(sandbox.install, "stash", "list") == ""
    [(_, receipt)] = receipts(sandbox)
    [step] = receipt["steps"]
    assert step.pop("at")  # when the step ran
    assert step["name"] == "local_changes_stash" and step["ok"] is True
    assert step["detail"].startswith("restored: ")


def test_update_parks_conflicting_local_changes_and_still_exits_0(sandbox: Sandbox) -> None:
    for patch in (ADOPTION, SCHEMA):  # one of them adds an untracked file
        assert git(sandbox.install, "apply", str(PATCHSET / patch)).returncode == 0
    sandbox.publish("v2026.11.9")
    result = hermes(sandbox, "update", "--yes")
    assert result.returncode == 0, result.stderr
    assert "parked: restore hit conflicts" in result.stdout
    assert out(sandbox.install, "rev-parse", "HEAD") == commit_of(sandbox, "v2026.11.9")
    assert out(sandbox.install, "status", "--porcelain") == "", "restore is all or nothing"
    [entry] = out(sandbox.install, "stash", "list", "--format=%H %s").splitlines()
    stash, subject = entry.split(" ", 1)
    assert re.fullmatch(r"On main: hermes-update-autostash-\d{8}-\d{6}", subject)
    [(name, receipt)] = receipts(sandbox)
    assert re.fullmatch(r"update_\d{8}_\d{6}_\d+_[0-9a-f]{32}\.json", name)
    assert receipt["outcome"] == "success" and receipt["exit_code"] == 0
    assert all(step.pop("at") for step in receipt["steps"])  # when each step ran
    assert receipt["steps"] == [
        {
            "name": "local_changes_stash",
            "ok": False,
            "detail": f"parked: {stash} (restore hit conflicts)",
        }
    ]


def test_update_keep_stash_parks_on_purpose(sandbox: Sandbox) -> None:
    assert git(sandbox.install, "apply", str(PATCHSET / ADOPTION)).returncode == 0
    sandbox.publish("v2026.10.1")
    result = hermes(sandbox, "update", "--yes", "--keep-stash")
    assert result.returncode == 0, result.stderr
    assert out(sandbox.install, "status", "--porcelain") == ""
    stash = out(sandbox.install, "rev-parse", "refs/stash")
    [(_, receipt)] = receipts(sandbox)
    assert receipt["steps"][0]["detail"] == f"parked: {stash} (kept on request)"


# ---------------------------------------------------------------- the cron worker


def hand_off(sandbox: Sandbox, install: Path, *payloads: Path) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", GATEWAY, *map(str, payloads)],
        cwd=install,
        env=sandbox.hermes_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.split()


def start_worker(sandbox: Sandbox, install: Path, payload: Path, ack: Path) -> subprocess.Popen:
    command = ["-m", "cron.scheduler", "--external-worker-file", str(payload), "--ack-file"]
    return subprocess.Popen(
        [sys.executable, *command, str(ack)],
        cwd=install,
        env=sandbox.hermes_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def ledger_status(sandbox: Sandbox, execution_id: str) -> str:
    uri = (sandbox.home / "cron" / "executions.db").as_uri() + "?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as conn:
        row = conn.execute("SELECT status FROM executions WHERE id=?", (execution_id,))
        return row.fetchone()[0]


@pytest.mark.parametrize("patches", [(), (ADOPTION,), (ADOPTION, SCHEMA)])
def test_worker_adopts_acks_and_completes(
    sandbox: Sandbox, tmp_path: Path, patches: tuple[str, ...]
) -> None:
    for patch in patches:
        assert git(sandbox.install, "apply", str(PATCHSET / patch)).returncode == 0
    payload, ack = tmp_path / "payload.json", tmp_path / "ack.json"
    [execution_id] = hand_off(sandbox, sandbox.install, payload)
    stdout, stderr = start_worker(sandbox, sandbox.install, payload, ack).communicate(timeout=30)
    assert "cron job practice-job ran: hello" in stdout, stderr
    assert json.loads(ack.read_text())["execution_id"] == execution_id
    assert ledger_status(sandbox, execution_id) == "completed"


def test_only_the_patched_worker_survives_a_held_write_lock(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """Issue #135487 for real: a write lock held past the 5 s busy timeout (slow: ~7 s)."""
    patched = sandbox.root / "patched-install"
    shutil.copytree(sandbox.install, patched, symlinks=True)
    assert git(patched, "apply", str(PATCHSET / ADOPTION)).returncode == 0
    payloads = [tmp_path / "plain.json", tmp_path / "patched.json"]
    acks = [tmp_path / "plain.ack", tmp_path / "patched.ack"]
    plain_id, patched_id = hand_off(sandbox, sandbox.install, *payloads)
    ledger = sandbox.home / "cron" / "executions.db"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(ledger), "7"], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    plain = start_worker(sandbox, sandbox.install, payloads[0], acks[0])
    fixed = start_worker(sandbox, patched, payloads[1], acks[1])
    _, plain_err = plain.communicate(timeout=30)
    fixed_out, fixed_err = fixed.communicate(timeout=30)
    assert "cron job practice-job ran: hello" in fixed_out
    assert holder.wait(timeout=10) == 0

    assert plain.returncode != 0
    assert "sqlite3.OperationalError: database is locked" in plain_err
    assert not acks[0].exists()
    assert ledger_status(sandbox, plain_id) == "claimed"

    assert fixed.returncode == 0, fixed_err
    assert json.loads(acks[1].read_text())["execution_id"] == patched_id
    assert ledger_status(sandbox, patched_id) == "completed"


def test_the_first_release_waits_5_s_and_has_no_grace_in_the_scheduler(sandbox: Sandbox) -> None:
    """0.21.2 is shaped like real 0.21.0-0.21.2 (before PR #110192): the hunk that writes
    `time.monotonic() + HANDOFF_ADOPTION_GRACE_SECONDS` would name an undefined name there."""
    old = out(sandbox.origin, "show", "v2026.9.11:cron/scheduler.py")
    new = out(sandbox.origin, "show", "v2026.9.14:cron/scheduler.py")
    assert "HANDOFF_ADOPTION_GRACE_SECONDS" not in old
    assert "deadline = time.monotonic() + 5.0" in python_def(old, "_launch_external_cron_worker")
    assert "argv == command" in old and "dispatch.mode" not in old
    assert "deadline = time.monotonic() + HANDOFF_ADOPTION_GRACE_SECONDS" in new
    assert "    HANDOFF_ADOPTION_GRACE_SECONDS,\n" in new  # imported from cron.executions
    assert header(ADOPTION, "Applies-To") == ">=0.21.3"
