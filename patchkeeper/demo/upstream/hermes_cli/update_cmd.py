"""`hermes update` for the practice upstream, shaped like the real one of Hermes 0.21.3.

What it does, in order (each step names the git commands, which are the real updater's):

1. Picks the target. Without `--branch` it follows the release channel: the newest release
   tag (CalVer `vYYYY.M.D`, one per release; SemVer-looking and suffixed tags like
   `v0.21.4+canary.1` or `rc.1-v0.21.5` are not releases) that points at the tip of origin's
   `main`, as `git ls-remote` lists them; with no such tag it follows main's tip commit. With
   `--branch NAME` it follows origin's NAME.
2. Fetches: one commit with `fetch --no-tags origin <sha>` (release channel; a shallow install
   learns no tags), or `fetch origin NAME`.
3. Stashes local changes, untracked files too, as `hermes-update-autostash-YYYYmmdd-HHMMSS`
   (UTC). Unmerged index entries are cleared first (`git reset`, the tree is kept) and
   intent-to-add entries become real adds, since `git stash` refuses both. Update autostashes
   older than 7 days are named, never dropped.
4. Moves HEAD. Release channel: `checkout --detach <sha>`; an old HEAD that was itself detached
   is kept at `refs/hermes/pre-release/<old sha>`. Branch: `merge --ff-only`; a diverged same
   branch is reset to origin (its old HEAD kept under `refs/hermes-update-backups/orphan-*`
   only when the two share no history); a checkout on another branch is tagged
   `pre-update-*` and has origin's branch merged into it, stopping on a conflict. If a
   critical file no longer compiles after the move, HEAD goes back and the update fails.
5. Settles the stash. `stash apply`; on a conflict the tree is reset, the stash is kept
   ("parked") and the update still succeeds with exit 0. A restore that breaks the health
   check (the critical files and restored Python files must compile) is undone, the stash is
   kept and the update fails with exit 1, without recording what happened to the stash. A
   good restore drops the stash by its bare index. `--keep-stash` parks it on purpose.
6. Writes a receipt, `HERMES_HOME/logs/update_receipts/update_<local time>_<pid>_<id>.json`,
   and the same bytes as `latest.json`; only the newest 20 receipts are kept. Everything
   printed is also appended to `HERMES_HOME/logs/update.log`.
7. Stamps the checkout (after HEAD moved, before the stash is settled): `install-stamp.json`
   at its root names the newest release behind the new HEAD (`merge-base --is-ancestor` on
   the commits `ls-remote` listed), its version (read from the annotated tag's message, the
   tag object fetched alone: no tag ref is made) and the commits since it (install_stamp.py).
   A stamp that cannot be written only warns.

Not here (the real updater has them): the interactive restore prompt, the
`updates.non_interactive_local_changes: discard` setting, the parked-branch guard, forks,
lockfile clean-up, the ZIP fallback, backups and the completion phase (venv, gateways).
"""

from __future__ import annotations

import json
import os
import py_compile
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from hermes_constants import get_hermes_home

CHECKOUT = Path(__file__).resolve().parent.parent
RELEASE_BRANCH = "main"
AUTOSTASH_PREFIX = "hermes-update-autostash-"
AUTOSTASH_WARN_DAYS = 7
STASH_STEP = "local_changes_stash"
RECEIPT_KEEP = 20
CRITICAL_FILES = (
    "hermes_cli/main.py",
    "hermes_cli/update_cmd.py",
    "cron/scheduler.py",
    "cron/executions.py",
)
NETWORK_TIMEOUT = 300.0  # a fetch that hangs ends as a failed update, not a stuck one
# A release is tagged by its date; the tag's name says nothing of the version it is.
_RELEASE_TAG = re.compile(r"v(\d{4})\.(\d{1,2})\.(\d{1,2})")


class UpdateError(Exception):
    """A step that had to succeed did not: the update stops with exit 1."""


# ---------------------------------------------------------------- git


def _git(*args: str, check: bool = True, network: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"} if network else None
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=CHECKOUT,
            capture_output=True,
            text=True,
            errors="replace",
            env=env,
            stdin=subprocess.DEVNULL,
            timeout=NETWORK_TIMEOUT if network else None,
        )
    except subprocess.TimeoutExpired as exc:
        raise UpdateError(f"git {args[0]} got no answer within {NETWORK_TIMEOUT:g} s") from exc
    if check and proc.returncode != 0:
        reason = (proc.stderr or proc.stdout).strip().splitlines() or [f"exit {proc.returncode}"]
        raise UpdateError(f"git {' '.join(args)} failed: {reason[-1]}")
    return proc


def _rev(ref: str) -> str | None:
    proc = _git("rev-parse", "-q", "--verify", f"{ref}^{{commit}}", check=False)
    if proc.returncode != 0:
        return None
    return proc.stdout.strip() or None


def _current_branch() -> str:
    """The checked-out branch; "" when HEAD is detached."""
    return _git("branch", "--show-current").stdout.strip()


def _untracked() -> set[str]:
    listed = _git("ls-files", "--others", "--exclude-standard", "-z").stdout
    return {path for path in listed.split("\0") if path}


# ---------------------------------------------------------------- the target


def _remote_refs() -> tuple[str | None, dict[str, str]]:
    """(origin's main tip or None, {release tag: its commit}) as `git ls-remote` lists them."""
    listing = _git(
        "ls-remote", "origin", f"refs/heads/{RELEASE_BRANCH}", "refs/tags/v*", network=True
    ).stdout
    tip = None
    tagged: dict[str, str] = {}
    for line in listing.splitlines():
        sha, _, ref = line.partition("\t")
        if ref == f"refs/heads/{RELEASE_BRANCH}":
            tip = sha
        elif ref.startswith("refs/tags/"):
            name = ref.removeprefix("refs/tags/")
            if name.endswith("^{}"):  # an annotated tag's commit wins over the tag object
                tagged[name.removesuffix("^{}")] = sha
            else:
                tagged.setdefault(name, sha)
    releases = {name: sha for name, sha in tagged.items() if _RELEASE_TAG.fullmatch(name)}
    return tip, releases


def _release_order(tag: str) -> tuple[int, ...]:
    match = _RELEASE_TAG.fullmatch(tag)
    return tuple(int(part) for part in match.groups()) if match else ()


def _latest_release(tip: str, releases: dict[str, str]) -> str | None:
    """The newest release tag at origin's main tip; None when none is tagged there."""
    at_tip = [name for name, sha in releases.items() if sha == tip]
    return max(at_tip, key=_release_order) if at_tip else None


# ---------------------------------------------------------------- local changes


def _warn_old_autostashes() -> None:
    """Name update autostashes older than a week. Never drops one: it may be the only copy."""
    listing = _git("stash", "list", "--format=%gd %s", check=False).stdout
    cutoff = datetime.now(UTC) - timedelta(days=AUTOSTASH_WARN_DAYS)
    old = []
    for line in listing.splitlines():
        selector, _, subject = line.partition(" ")
        at = subject.find(AUTOSTASH_PREFIX)
        if at < 0:
            continue
        stamp = subject[at + len(AUTOSTASH_PREFIX) :][:15]
        try:
            made = datetime.strptime(stamp, "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
        except ValueError:
            continue  # age unknown: say nothing rather than guess
        if made < cutoff:
            old.append(f"    {selector}  ({AUTOSTASH_PREFIX}{stamp})")
    if old:
        print(f"⚠ {len(old)} update autostash(es) older than {AUTOSTASH_WARN_DAYS} days:")
        print("\n".join(old))
        print("  They hold local changes an earlier update never put back.")
        print("  Look: git stash show -p <entry>   Restore: git stash apply <entry>")


def _stash_local_changes() -> str | None:
    """Stash a dirty tree, untracked files included; the stash commit, or None if clean."""
    status = _git("status", "--porcelain", "-z").stdout
    if not status.strip("\0"):
        return None
    if _git("ls-files", "-u").stdout.strip():
        print("→ Clearing unmerged index entries left by an earlier conflict...")
        _git("reset", "-q", check=False)
    # `git add -N` entries (" A") make `git stash` refuse; a real add keeps their content.
    intent_to_add = [rec[3:] for rec in status.split("\0") if len(rec) > 3 and rec[:2] == " A"]
    if intent_to_add:
        print(f"→ Staging {len(intent_to_add)} intent-to-add file(s) so they can be stashed...")
        _git("add", "--", *intent_to_add, check=False)
    name = AUTOSTASH_PREFIX + datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    print("→ Local changes detected — stashing before update...")
    before = _rev("refs/stash")
    push = _git("stash", "push", "--include-untracked", "-m", name, check=False)
    sha = _rev("refs/stash")
    if sha is None or sha == before:
        reason = (push.stderr or push.stdout).strip().splitlines() or [f"exit {push.returncode}"]
        raise UpdateError(f"could not stash local changes ({reason[0]}); nothing was changed")
    if push.returncode != 0:  # saved, but some files could not be removed: all is in the stash
        _git("reset", "-q", "--hard", "HEAD", check=False)
    print(f"  saved as {name} ({sha[:12]})")
    return sha


def _stash_index(sha: str) -> str | None:
    """The bare index `N` of stash commit SHA (`git stash drop <sha>` is refused)."""
    for line in _git("stash", "list", "--format=%gd %H").stdout.splitlines():
        selector, _, commit = line.partition(" ")
        if commit == sha:
            found = re.fullmatch(r"stash@\{(\d+)\}", selector)
            return found.group(1) if found else selector
    return None


def _undo_restore(untracked_before: set[str]) -> None:
    """Back to the clean new HEAD: tracked changes reset, files the restore created removed."""
    created = sorted(_untracked() - untracked_before)
    _git("reset", "-q", "--hard", "HEAD", check=False)
    if created:
        _git("clean", "-f", "-d", "-q", "--", *created, check=False)


def _compile_failure(paths: list[str]) -> tuple[str, str] | None:
    """(path, error) of the first file that does not compile; no bytecode lands in the tree."""
    with tempfile.TemporaryDirectory(prefix="hermes-syntax-check-") as scratch:
        for number, relative in enumerate(paths):
            path = CHECKOUT / relative
            if not path.is_file():
                continue
            try:
                py_compile.compile(str(path), cfile=f"{scratch}/{number}.pyc", doraise=True)
            except py_compile.PyCompileError as exc:
                return relative, str(exc).strip()
            except OSError as exc:
                return relative, f"cannot read: {exc}"
    return None


def _restored_python(untracked_before: set[str]) -> list[str]:
    changed = _git("diff", "--name-only", "-z", "HEAD", "--", "*.py").stdout.split("\0")
    created = [path for path in _untracked() - untracked_before if path.endswith(".py")]
    return sorted({path for path in changed if path} | set(created))


def _stash_step(outcome: str, sha: str, detail: str = "") -> dict[str, Any]:
    text = f"{outcome}: {sha}" + (f" ({detail})" if detail else "")
    return {"name": STASH_STEP, "ok": outcome != "parked", "detail": text, "at": _now()}


def _park(sha: str, reason: str) -> dict[str, Any]:
    print(f"parked: {reason}; your local changes are kept in the stash")
    print(f"  restore with: git stash apply {sha}")
    return _stash_step("parked", sha, reason)


def _restore(sha: str) -> dict[str, Any]:
    """Put the stash back, all or nothing; UpdateError when the restore breaks the install."""
    untracked_before = _untracked()
    sound = [path for path in CRITICAL_FILES if _compile_failure([path]) is None]
    print("→ Restoring local changes...")
    applied = _git("stash", "apply", sha, check=False)
    conflicted = _git("diff", "--name-only", "--diff-filter=U").stdout.split()
    if applied.returncode != 0 or conflicted:
        print("✗ Update pulled new code, but restoring local changes hit conflicts.")
        for path in conflicted:
            print(f"  • {path}")
        _undo_restore(untracked_before)
        print("  Working tree reset to the updated code.")
        return _park(sha, "restore hit conflicts")
    # The health check: what compiled before the restore still does, and so does every
    # Python file the restore brought back.
    failure = _compile_failure(list(dict.fromkeys(sound + _restored_python(untracked_before))))
    if failure:
        path, error = failure
        _undo_restore(untracked_before)
        print("✗ Restored local changes made the Hermes agent unexecutable.")
        print(f"  Health check failed: {path}")
        for line in error.splitlines()[:6]:
            print(f"    {line}")
        print("  The clean updated tree has been restored.")
        print(f"  Your local changes remain preserved in stash: {sha}")
        print(f"  Restore manually after fixing them: git stash apply {sha}")
        raise UpdateError(f"restored local changes do not compile ({path})")
    index = _stash_index(sha)
    dropped = index is not None and _git("stash", "drop", index, check=False).returncode == 0
    if not dropped:
        print(f"⚠ Local changes were restored, but the stash {sha[:12]} could not be dropped.")
    print("Local changes restored")
    return _stash_step("restored", sha)


# ---------------------------------------------------------------- moving HEAD


def _follow_branch(branch: str, before: str) -> None:
    """Bring the checkout to origin/BRANCH (fast-forward, reset or merge, see the docstring)."""
    target = f"origin/{branch}"
    current = _current_branch()
    if not current:
        print(f"  ⚠ Currently on detached HEAD — switching to {branch} for update...")
        if _git("checkout", "-q", branch, check=False).returncode != 0:
            _git("checkout", "-q", "-B", branch, target)
        current = branch
    if _git("merge", "--ff-only", target, check=False).returncode == 0:
        return
    if current != branch:  # local commits on another branch: merge, never reset them away
        print(f"  ⚠ Checkout is on branch '{current}' — merging {target} so local commits survive")
        _git("tag", f"pre-update-{time.strftime('%Y%m%d-%H%M%S')}", check=False)
        if _git("merge", "--no-edit", target, check=False).returncode != 0:
            _git("merge", "--abort", check=False)
            print(f"  Resolve by hand: cd {CHECKOUT} && git merge {target}")
            raise UpdateError(f"merging {target} into '{current}' conflicts; nothing was merged")
        return
    if not _git("merge-base", "HEAD", target, check=False).stdout.strip():
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        backup = f"refs/hermes-update-backups/orphan-{branch}-{stamp}-{before[:12]}"
        if _git("update-ref", backup, before, check=False).returncode == 0:
            print(f"  ⚠ No history shared with {target}; old HEAD saved as {backup}")
        else:
            print(f"  ⚠ No history shared with {target}; saving old HEAD {before} failed")
    print("  ⚠ Fast-forward not possible (history diverged), resetting to match remote...")
    _git("reset", "-q", "--hard", target)


def _roll_back_if_broken(before: str) -> None:
    failure = _compile_failure(list(CRITICAL_FILES))
    if failure is None:
        return
    path, error = failure
    print(f"✗ The new code has a syntax error in a critical file: {path}")
    for line in error.splitlines()[:6]:
        print(f"    {line}")
    _git("reset", "-q", "--hard", before)
    print(f"→ Rolled back to {before[:10]}")
    raise UpdateError(f"the new code does not compile ({path}); rolled back")


# ---------------------------------------------------------------- the receipt and the log


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _write_atomic(path: Path, payload: str) -> None:
    scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    scratch.write_text(payload, encoding="utf-8")
    os.replace(scratch, path)


def _write_receipt(receipt: dict[str, Any]) -> Path | None:
    """Write the receipt and latest.json, keep the newest few; a failure only warns."""
    try:
        folder = get_hermes_home() / "logs" / "update_receipts"
        folder.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d_%H%M%S")  # local time, as the real updater names them
        path = folder / f"update_{stamp}_{os.getpid()}_{receipt['update_id']}.json"
        payload = json.dumps(receipt, indent=2, default=str) + "\n"
        _write_atomic(path, payload)
        _write_atomic(folder / "latest.json", payload)
        written = sorted(
            (p for p in folder.glob("update_*.json") if p.is_file()),
            key=lambda p: (p.stat().st_mtime_ns, p.name),
            reverse=True,
        )
        for stale in written[RECEIPT_KEEP:]:
            with suppress(OSError):
                stale.unlink()
        return path
    except OSError as exc:
        print(f"⚠ could not write the update receipt: {exc}", file=sys.stderr)
        return None


class _Mirror:
    """A text stream that also appends everything written to it to the update log."""

    def __init__(self, stream: TextIO, log: TextIO) -> None:
        self._stream, self._log = stream, log

    def write(self, text: str) -> int:
        self._stream.write(text)
        with suppress(OSError, ValueError):
            self._log.write(text)
        return len(text)

    def flush(self) -> None:
        self._stream.flush()
        with suppress(OSError, ValueError):
            self._log.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def _mirrored_output() -> Iterator[None]:
    try:
        path = get_hermes_home() / "logs" / "update.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        log = path.open("a", encoding="utf-8")
    except OSError:
        yield  # no log is no reason to refuse the update
        return
    saved = sys.stdout, sys.stderr
    with log:
        log.write(f"\n=== hermes update {_now()} pid {os.getpid()} ===\n")
        sys.stdout = _Mirror(saved[0], log)  # type: ignore[assignment]
        sys.stderr = _Mirror(saved[1], log)  # type: ignore[assignment]
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            sys.stdout, sys.stderr = saved


# ---------------------------------------------------------------- the command


def _fetch_target(
    receipt: dict[str, Any], branch: str | None, tip: str | None, releases: dict[str, str]
) -> str | None:
    """Fetch what the update goes to; the release commit, or None when following BRANCH."""
    if branch is not None:
        receipt["target"] = {"channel": "branch", "branch": branch}
        print("→ Fetching updates...")
        _git("fetch", "-q", "origin", branch, network=True)
        return None
    if tip is None:
        raise UpdateError(f"origin has no {RELEASE_BRANCH} branch")
    tag, sha = _latest_release(tip, releases), tip
    receipt["target"] = {"channel": "release", "tag": tag, "commit": sha}
    if tag:
        print(f"→ Latest release: {tag}")
    else:
        print(
            f"→ Latest release: none tagged at origin's {RELEASE_BRANCH}; "
            f"following its tip {sha[:12]}"
        )
    print("→ Fetching updates...")
    _git("fetch", "-q", "--no-tags", "origin", sha, network=True)
    return sha


def _tag_version(tag: str) -> str | None:
    """The version release TAG is: its annotated message says `Hermes Agent <version>`.

    Only the tag object is fetched (to FETCH_HEAD): the checkout gets no tag ref.
    """
    _git("fetch", "-q", "--no-tags", "origin", f"refs/tags/{tag}", network=True)
    message = _git("cat-file", "-p", _git("rev-parse", "FETCH_HEAD").stdout.strip(), check=False)
    found = re.search(r"^Hermes Agent (\S+)$", message.stdout, re.MULTILINE)
    return found.group(1) if found else None


def _stamp_install(releases: dict[str, str]) -> None:
    """Write install-stamp.json for the new HEAD: the newest release at or behind it, and how
    many commits past it HEAD is. A stamp that cannot be written only warns."""
    from hermes_cli.install_stamp import build_stamp, write_stamp

    behind = [
        name
        for name, sha in releases.items()
        if _git("merge-base", "--is-ancestor", sha, "HEAD", check=False).returncode == 0
    ]
    base, distance = "0.0.0", None
    try:
        if behind:
            newest = max(behind, key=_release_order)
            count = _git("rev-list", "--count", f"{releases[newest]}..HEAD").stdout.strip()
            base, distance = _tag_version(newest) or base, int(count)
        write_stamp(build_stamp(base, distance, CHECKOUT))
    except (UpdateError, OSError, ValueError) as exc:
        print(f"⚠ could not write install-stamp.json: {exc}", file=sys.stderr)


def _switch_to_release(sha: str, before: str) -> None:
    """Land detached at the release commit; the user's branch is never moved or rewritten."""
    if sha == before:
        return
    if not _current_branch():  # a detached old HEAD is reachable from no branch: keep it
        _git("update-ref", f"refs/hermes/pre-release/{before}", before)
    print(f"→ Switching to source commit {sha[:10]}")
    _git("checkout", "-q", "--detach", sha)


def _update(receipt: dict[str, Any], *, branch: str | None, keep_stash: bool) -> None:
    before = _rev("HEAD")
    if before is None:
        raise UpdateError(f"{CHECKOUT} has no commit checked out")
    receipt["pre_update"] = before
    _warn_old_autostashes()
    tip, releases = _remote_refs()
    release = _fetch_target(receipt, branch, tip, releases)
    stash = _stash_local_changes()
    try:
        if release is not None:
            _switch_to_release(release, before)
        else:
            _follow_branch(str(branch), before)
        after = _rev("HEAD") or before
        if after != before:
            _roll_back_if_broken(before)
    except UpdateError:
        if stash:  # the tree's state is not known well enough to put changes back
            print(f"  → Local changes preserved in stash: {stash}")
            print(f"  Restore manually with: git stash apply {stash}")
        raise
    receipt["post_update"] = after
    moved = after != before
    print(f"✓ Code updated: {before[:9]} -> {after[:9]}" if moved else "✓ Already up to date.")
    _stamp_install(releases)
    if stash is None:
        return
    if keep_stash and moved:  # when nothing moved there is nothing to keep the changes from
        print("Local changes were stashed before updating and NOT re-applied (--keep-stash).")
        receipt["steps"].append(_park(stash, "kept on request"))
    else:
        receipt["steps"].append(_restore(stash))


def run_update(*, branch: str | None = None, keep_stash: bool = False) -> int:
    """Run one update; the exit code (0 also when local changes were parked)."""
    receipt: dict[str, Any] = {
        "schema": 1,
        "update_id": uuid.uuid4().hex,
        "started_at": _now(),
        "finished_at": None,
        "argv": list(sys.argv),
        "pid": os.getpid(),
        "outcome": "running",
        "pre_update": None,
        "post_update": None,
        "steps": [],
        "skips": [],
    }
    with _mirrored_output():
        print("☤ Updating Hermes Agent...")
        try:
            _update(receipt, branch=branch, keep_stash=keep_stash)
            receipt.update(outcome="success", exit_code=0)
        except UpdateError as exc:
            print(f"✗ Update failed: {exc}", file=sys.stderr)
            receipt.update(outcome="failed", exit_code=1, error=str(exc))
        if receipt["post_update"] is None:
            receipt["post_update"] = _rev("HEAD")
        receipt["finished_at"] = _now()
        _write_receipt(receipt)
    return int(receipt["exit_code"])
