"""The practice upstream's `hermes update` behaves like the real one of Hermes 0.21.3.

Every test runs the sandbox's own `./hermes update` in a real install, with the sandbox's
HERMES_HOME, and reads the install, origin and the receipts it leaves. Release names come from
the sandbox's TAGS (first, second, last), never from literals.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import GIT_ID

from patchkeeper.demo.sandbox import INSTALL_TAG, TAGS, Sandbox
from patchkeeper.leftovers.receipts import LATEST, RECEIPTS_DIR, Receipt, read_receipts

# The release the install starts at, the one after it, the newest.
FIRST, SECOND, LAST = INSTALL_TAG, TAGS[TAGS.index(INSTALL_TAG) + 1], TAGS[-1]
AUTOSTASH = re.compile(r"saved as (hermes-update-autostash-(\d{8}-\d{6})) \(([0-9a-f]{12})\)")
RECEIPT_NAME = re.compile(r"update_(\d{8}_\d{6})_(\d+)_([0-9a-f]{32})\.json")


def git(repo: Path, *args: str, check: bool = True) -> str:
    proc = subprocess.run(
        ["git", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ID, "LC_ALL": "C"},
        check=False,
    )
    assert proc.returncode == 0 or not check, f"git {args}: {proc.stderr}"
    return proc.stdout.strip()


def hermes_update(sandbox: Sandbox, *args: str) -> subprocess.CompletedProcess[str]:
    """`./hermes update --yes ARGS`, as tests/helpers.py `bare_hermes_update` runs it."""
    return subprocess.run(
        ["./hermes", "update", "--yes", *args],
        cwd=sandbox.install,
        env=sandbox.hermes_env(),
        capture_output=True,
        text=True,
        check=False,
    )


def commit_of(sandbox: Sandbox, tag: str) -> str:
    return git(sandbox.origin, "rev-parse", f"{tag}^{{commit}}")


def head(sandbox: Sandbox) -> str:
    return git(sandbox.install, "rev-parse", "HEAD")


def branch(sandbox: Sandbox) -> str:
    return git(sandbox.install, "branch", "--show-current")


def status(sandbox: Sandbox) -> str:
    return git(sandbox.install, "status", "--porcelain", "--untracked-files=all")


def stashes(sandbox: Sandbox) -> list[str]:
    return git(sandbox.install, "stash", "list", "--format=%H %s").splitlines()


def receipts_folder(sandbox: Sandbox) -> Path:
    return sandbox.home / RECEIPTS_DIR


def last_receipt(sandbox: Sandbox) -> Receipt:
    newest = read_receipts([receipts_folder(sandbox)]).newest
    assert newest is not None
    return newest


def saved_stash(stdout: str) -> tuple[str, datetime, str]:
    """(stash message, its UTC stamp, abbreviated sha) the updater printed when it stashed."""
    found = AUTOSTASH.search(stdout)
    assert found, stdout
    stamp = datetime.strptime(found.group(2), "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
    return found.group(1), stamp, found.group(3)


def ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def untouched_line(sandbox: Sandbox, path: str, old: str, new: str) -> int:
    """A line number in PATH (at OLD) far from anything release NEW changes there."""
    before = git(sandbox.origin, "show", f"{old}:{path}").splitlines()
    after = git(sandbox.origin, "show", f"{new}:{path}").splitlines()
    blocks = difflib.SequenceMatcher(None, before, after, autojunk=False).get_matching_blocks()
    start, _, size = max(blocks, key=lambda block: block.size)
    assert size >= 8, f"{path}: no long unchanged stretch between {old} and {new}"
    return start + size // 2


def edit_line(file: Path, number: int, text: str) -> None:
    lines = file.read_text().splitlines(keepends=True)
    lines.insert(number, text)
    file.write_text("".join(lines))


# ---------------------------------------------------------------- the release channel


def test_release_channel_lands_detached_at_the_release_and_fetches_no_tags(
    sandbox: Sandbox,
) -> None:
    tags_before = git(sandbox.install, "tag")
    main_before = git(sandbox.install, "rev-parse", "refs/heads/main")
    sandbox.publish(SECOND)
    proc = ok(hermes_update(sandbox))
    assert f"→ Latest release: {SECOND}" in proc.stdout
    assert head(sandbox) == commit_of(sandbox, SECOND)
    assert branch(sandbox) == "", "a release is checked out detached"
    assert git(sandbox.install, "rev-parse", "refs/heads/main") == main_before, "main untouched"
    assert git(sandbox.install, "tag") == tags_before, "fetched with --no-tags"
    assert git(sandbox.install, "for-each-ref", "refs/hermes/") == "", "HEAD was on a branch"
    receipt = last_receipt(sandbox)
    assert receipt.outcome == "success" and receipt.data["exit_code"] == 0
    assert receipt.data["post_update"] == commit_of(sandbox, SECOND)
    assert receipt.data["target"]["tag"] == SECOND


def test_a_second_update_keeps_the_detached_old_head(sandbox: Sandbox) -> None:
    sandbox.publish(SECOND)
    ok(hermes_update(sandbox))
    old = head(sandbox)
    sandbox.publish(LAST)
    proc = ok(hermes_update(sandbox))
    assert f"→ Latest release: {LAST}" in proc.stdout
    assert head(sandbox) == commit_of(sandbox, LAST) and branch(sandbox) == ""
    kept = git(sandbox.install, "for-each-ref", "--format=%(refname) %(objectname)", "refs/hermes/")
    assert kept == f"refs/hermes/pre-release/{old} {old}"


def test_already_at_the_release_nothing_moves(sandbox: Sandbox) -> None:
    proc = ok(hermes_update(sandbox))
    assert f"→ Latest release: {FIRST}" in proc.stdout and "Already up to date" in proc.stdout
    assert head(sandbox) == commit_of(sandbox, FIRST) and branch(sandbox) == "main"


def new_origin_commit(sandbox: Sandbox, message: str) -> str:
    """A commit on top of origin's main (same tree), which becomes main's tip."""
    tip = git(sandbox.origin, "rev-parse", "refs/heads/main")
    sha = git(sandbox.origin, "commit-tree", f"{tip}^{{tree}}", "-p", tip, "-m", message)
    git(sandbox.origin, "update-ref", "refs/heads/main", sha)
    return sha


def test_only_calver_tags_are_releases(sandbox: Sandbox) -> None:
    sandbox.publish(SECOND)
    git(sandbox.origin, "tag", "v0.21.5", f"{SECOND}^{{commit}}")  # SemVer-looking: not one
    git(sandbox.origin, "tag", "v2026.9.1", f"{SECOND}^{{commit}}")  # an older date, same commit
    proc = ok(hermes_update(sandbox))
    assert f"→ Latest release: {SECOND}" in proc.stdout
    tip = new_origin_commit(sandbox, "untagged work on main")
    git(sandbox.origin, "tag", "v0.99.0", tip)
    git(sandbox.origin, "tag", "v2026.12.1-canary.1", tip)
    proc = ok(hermes_update(sandbox))
    assert "→ Latest release: none tagged at origin's main; following its tip" in proc.stdout
    assert head(sandbox) == tip and branch(sandbox) == ""
    assert "v0.21.5" not in git(sandbox.install, "tag")


# ---------------------------------------------------------------- the autostash


def test_local_changes_are_stashed_restored_and_the_stash_dropped_by_index(
    sandbox: Sandbox,
) -> None:
    install = sandbox.install
    (install / "notes.txt").write_text("my own work\n")
    git(install, "add", "notes.txt")
    git(install, "stash", "push", "-m", "my own stash")  # must survive the drop
    mine = stashes(sandbox)
    (install / "README.md").write_text((install / "README.md").read_text() + "local note\n")
    (install / "scratch.txt").write_text("untracked\n")
    sandbox.publish(SECOND)
    before = datetime.now(UTC).replace(microsecond=0)
    proc = ok(hermes_update(sandbox))
    message, made, short = saved_stash(proc.stdout)
    assert before - timedelta(seconds=2) <= made <= datetime.now(UTC), "the stamp is UTC"
    assert "Local changes restored" in proc.stdout
    assert head(sandbox) == commit_of(sandbox, SECOND)
    assert (install / "README.md").read_text().endswith("local note\n")
    assert (install / "scratch.txt").read_text() == "untracked\n"
    assert stashes(sandbox) == mine, "only the update's own stash is dropped"
    receipt = last_receipt(sandbox)
    assert receipt.stash_outcome == "restored" and receipt.stash_step["ok"] is True
    sha = receipt.stash_sha
    assert sha and sha.startswith(short) and receipt.stash_detail == f"restored: {sha}"
    subject = git(install, "show", "-s", "--format=%s", sha)
    assert subject == f"On main: {message}"  # the stash commit stays in the object store


def test_unmerged_and_intent_to_add_entries_do_not_stop_the_stash(sandbox: Sandbox) -> None:
    install = sandbox.install
    (install / "added.txt").write_text("new file\n")
    git(install, "add", "-N", "added.txt")
    blob = git(install, "rev-parse", "HEAD:README.md")
    unmerged = f"0 {'0' * 40}\tREADME.md\n" + "".join(
        f"100644 {blob} {stage}\tREADME.md\n" for stage in (1, 2, 3)
    )
    subprocess.run(
        ["git", "update-index", "--index-info"], cwd=install, input=unmerged, text=True, check=True
    )
    (install / "README.md").write_text((install / "README.md").read_text() + "resolved by me\n")
    assert git(install, "ls-files", "-u")
    sandbox.publish(SECOND)
    proc = ok(hermes_update(sandbox))
    assert "Clearing unmerged index entries" in proc.stdout
    assert "intent-to-add" in proc.stdout
    assert git(install, "ls-files", "-u") == ""
    assert (install / "added.txt").read_text() == "new file\n"
    assert (install / "README.md").read_text().endswith("resolved by me\n")
    assert last_receipt(sandbox).stash_outcome == "restored"


def test_a_conflicting_restore_parks_the_stash_and_still_exits_0(sandbox: Sandbox) -> None:
    install = sandbox.install
    changed = git(sandbox.origin, "diff", "--name-only", FIRST, SECOND, "--", "*.py").split()
    target = install / changed[0]
    target.write_text("# rewritten here\nVALUE = 1\n")  # both sides change the same lines
    (install / "scratch.txt").write_text("untracked\n")
    sandbox.publish(SECOND)
    proc = ok(hermes_update(sandbox))
    assert "parked: restore hit conflicts" in proc.stdout
    assert head(sandbox) == commit_of(sandbox, SECOND)
    assert status(sandbox) == "", "restore is all or nothing, untracked files too"
    [entry] = stashes(sandbox)
    sha, subject = entry.split(" ", 1)
    assert re.fullmatch(r"On main: hermes-update-autostash-\d{8}-\d{6}", subject)
    receipt = last_receipt(sandbox)
    assert receipt.outcome == "success" and receipt.data["exit_code"] == 0
    [step] = receipt.steps
    assert {k: step[k] for k in ("name", "ok", "detail")} == {
        "name": "local_changes_stash",
        "ok": False,
        "detail": f"parked: {sha} (restore hit conflicts)",
    }


def test_keep_stash_parks_on_purpose(sandbox: Sandbox) -> None:
    install = sandbox.install
    (install / "README.md").write_text((install / "README.md").read_text() + "local note\n")
    sandbox.publish(SECOND)
    proc = ok(hermes_update(sandbox, "--keep-stash"))
    assert "parked: kept on request" in proc.stdout
    assert status(sandbox) == "" and head(sandbox) == commit_of(sandbox, SECOND)
    [entry] = stashes(sandbox)
    sha = entry.split(" ", 1)[0]
    receipt = last_receipt(sandbox)
    assert receipt.stash_detail == f"parked: {sha} (kept on request)" and receipt.parked


def test_a_restore_that_breaks_a_critical_file_is_undone_and_exits_1(sandbox: Sandbox) -> None:
    install = sandbox.install
    critical = "cron/scheduler.py"
    edit_line(install / critical, untouched_line(sandbox, critical, FIRST, SECOND), "def (:\n")
    sandbox.publish(SECOND)
    proc = hermes_update(sandbox)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"Health check failed: {critical}" in proc.stdout
    assert head(sandbox) == commit_of(sandbox, SECOND), "the update itself landed"
    assert status(sandbox) == "", "the clean updated tree is back"
    [entry] = stashes(sandbox)
    sha = entry.split(" ", 1)[0]
    assert f"preserved in stash: {sha}" in proc.stdout
    receipt = last_receipt(sandbox)
    assert receipt.outcome == "failed" and receipt.data["exit_code"] == 1
    assert receipt.stash_step is None, "no stash disposition is recorded"


def test_old_update_autostashes_are_named_never_dropped(sandbox: Sandbox) -> None:
    install = sandbox.install
    (install / "README.md").write_text("forgotten\n")
    git(install, "stash", "push", "-m", "hermes-update-autostash-20200101-000000")
    kept = stashes(sandbox)
    proc = ok(hermes_update(sandbox))
    assert "older than 7 days" in proc.stdout
    assert "stash@{0}  (hermes-update-autostash-20200101-000000)" in proc.stdout
    assert stashes(sandbox) == kept


# ---------------------------------------------------------------- receipts and the log


def test_receipts_are_named_copied_to_latest_and_capped_at_20(sandbox: Sandbox) -> None:
    folder = receipts_folder(sandbox)
    folder.mkdir(parents=True)
    for number in range(25):  # older receipts, oldest first by modification time
        old = folder / f"update_20260101_0000{number:02d}_1_{number:032x}.json"
        old.write_text(json.dumps({"schema": 1, "started_at": "2026-01-01T00:00:00+00:00"}))
        os.utime(old, (1_700_000_000 + number, 1_700_000_000 + number))
    sandbox.publish(SECOND)
    ok(hermes_update(sandbox))
    stamped = sorted(p.name for p in folder.glob("update_*.json"))
    assert len(stamped) == 20
    assert "update_20260101_000000_1_" + f"{0:032x}.json" not in stamped, "the oldest went"
    [mine] = [name for name in stamped if not name.startswith("update_20260101_")]
    found = RECEIPT_NAME.fullmatch(mine)
    assert found, mine
    local = datetime.strptime(found.group(1), "%Y%m%d_%H%M%S")
    assert abs(datetime.now() - local) < timedelta(minutes=2), "the stamp is local time"
    assert (folder / LATEST).read_bytes() == (folder / mine).read_bytes()
    data = json.loads((folder / mine).read_text())
    assert data["update_id"] == found.group(3) and data["pid"] == int(found.group(2))
    assert data["outcome"] == "success" and data["steps"] == []
    assert data["pre_update"] == commit_of(sandbox, FIRST)
    assert data["post_update"] == commit_of(sandbox, SECOND)
    for key in ("started_at", "finished_at"):
        assert datetime.fromisoformat(data[key]).utcoffset() is not None
    log = (sandbox.home / "logs" / "update.log").read_text()
    assert f"→ Latest release: {SECOND}" in log


# ---------------------------------------------------------------- --branch


def test_branch_main_fast_forwards_and_reattaches_a_detached_head(sandbox: Sandbox) -> None:
    sandbox.publish(SECOND)
    proc = ok(hermes_update(sandbox, "--branch", "main"))
    assert "Latest release" not in proc.stdout
    assert branch(sandbox) == "main" and head(sandbox) == commit_of(sandbox, SECOND)
    assert last_receipt(sandbox).data["target"] == {"channel": "branch", "branch": "main"}
    git(sandbox.install, "checkout", "-q", "--detach", "HEAD")
    sandbox.publish(LAST)
    proc = ok(hermes_update(sandbox, "--branch", "main"))
    assert "switching to main" in proc.stdout
    assert branch(sandbox) == "main" and head(sandbox) == commit_of(sandbox, LAST)


def test_branch_diverged_is_reset_and_an_orphan_head_is_kept(sandbox: Sandbox) -> None:
    install = sandbox.install
    (install / "mine.txt").write_text("local commit\n")
    git(install, "add", "mine.txt")
    git(install, "commit", "-q", "-m", "local work on main")
    sandbox.publish(SECOND)
    ok(hermes_update(sandbox, "--branch", "main"))
    assert head(sandbox) == commit_of(sandbox, SECOND), "diverged same branch: reset"
    assert git(install, "for-each-ref", "refs/hermes-update-backups/") == ""
    git(install, "checkout", "-q", "--orphan", "fresh")
    git(install, "commit", "-q", "-m", "history of its own")
    git(install, "branch", "-q", "-M", "fresh", "main")
    orphan = head(sandbox)
    sandbox.publish(LAST)
    ok(hermes_update(sandbox, "--branch", "main"))
    assert head(sandbox) == commit_of(sandbox, LAST)
    [ref] = git(
        install, "for-each-ref", "--format=%(refname) %(objectname)", "refs/hermes-update-backups/"
    ).splitlines()
    name, sha = ref.split(" ")
    assert sha == orphan
    assert re.fullmatch(
        rf"refs/hermes-update-backups/orphan-main-\d{{8}}-\d{{6}}-{orphan[:12]}", name
    )


def test_branch_on_a_custom_branch_merges_after_a_tag_and_stops_on_conflict(
    sandbox: Sandbox,
) -> None:
    install = sandbox.install
    git(install, "checkout", "-q", "-b", "mine")
    (install / "mine.txt").write_text("local commit\n")
    git(install, "add", "mine.txt")
    git(install, "commit", "-q", "-m", "local work")
    sandbox.publish(SECOND)
    ok(hermes_update(sandbox, "--branch", "main"))
    assert branch(sandbox) == "mine"
    assert git(install, "merge-base", "--is-ancestor", commit_of(sandbox, SECOND), "HEAD") == ""
    assert (install / "mine.txt").is_file()
    [tag] = git(install, "tag", "--list", "pre-update-*").splitlines()
    assert re.fullmatch(r"pre-update-\d{8}-\d{6}", tag)
    changed = git(sandbox.origin, "diff", "--name-only", SECOND, LAST, "--", "*.py").split()
    (install / changed[0]).write_text("# rewritten here\nVALUE = 1\n")
    git(install, "commit", "-q", "-am", "a rewrite upstream also changes")
    before = head(sandbox)
    time.sleep(1.1)  # the next pre-update tag gets its own second
    sandbox.publish(LAST)
    proc = hermes_update(sandbox, "--branch", "main")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "conflicts; nothing was merged" in proc.stderr
    assert head(sandbox) == before and branch(sandbox) == "mine" and status(sandbox) == ""
    assert len(git(install, "tag", "--list", "pre-update-*").splitlines()) == 2
    receipt = last_receipt(sandbox)
    assert receipt.outcome == "failed" and receipt.data["exit_code"] == 1


@pytest.mark.parametrize("flag", ["-y", "--yes"])
def test_yes_has_a_short_form(sandbox: Sandbox, flag: str) -> None:
    proc = subprocess.run(
        ["./hermes", "update", flag],
        cwd=sandbox.install,
        env=sandbox.hermes_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
