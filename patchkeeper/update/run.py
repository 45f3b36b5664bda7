"""`patchkeeper update`: run the upstream's updater and carry the patch set across it.

The updater (`hermes update`) stashes whatever is dirty, moves HEAD, and may leave the stash
parked while reporting success. So patchkeeper never lets it see a dirty tree: before it runs,
patchkeeper takes its own patches out and puts the user's own edits into a named ref (a commit
on the old HEAD), leaving a clean checkout; afterwards it applies the patch set to the new
version and merges the edits back file by file. Each phase is recorded in the journal before
it starts (journal.py), and everything the phases need to undo or finish the run lives in git
objects named by refs, so `recover` can finish or roll back a run killed at any point.

Phases: 1 preflight, 2 preview, 3 set-aside, 4 upstream, 5 leftovers, 6 apply, 7 restore,
8 smoke, 9 post, 10 report. Phases 5-10 are also how `recover` finishes an interrupted run.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

from patchkeeper.engine.classify import split_hunks
from patchkeeper.engine.patching import TreeReport, apply_patches, check_symlinks, worktree_status
from patchkeeper.install import git, gitlocks, trees
from patchkeeper.install import journal as jr
from patchkeeper.install.checkout import Install, install_version, operation_in_progress
from patchkeeper.install.lock import InstallLock
from patchkeeper.install.processes import run_in_group
from patchkeeper.install.scratch import (
    plain_index,
    ref_paths_tree,
    scratch_index,
    worktree_paths_tree,
)
from patchkeeper.install.state import (
    APPLIED_FILE,
    WRITTEN_DIR,
    load_applied,
    save_applied,
    written_diff,
)
from patchkeeper.install.version import adopt_remote_tags, version_from_worktree
from patchkeeper.install.workspace import Workspace
from patchkeeper.install.worktree_writer import write_merge, write_trees
from patchkeeper.leftovers import find as lo
from patchkeeper.leftovers import heal
from patchkeeper.model import exitcodes, nextstep
from patchkeeper.model import outcomes as oc
from patchkeeper.model.errors import PatchkeeperError, UserError
from patchkeeper.patchset.settings import CONFIG_NAME
from patchkeeper.patchset.versions import VersionInfo
from patchkeeper.proof.smoke import Interpreter, interpreter_facts, run_for_patches, worst_verdict
from patchkeeper.update.rollback import STATE_BACKUP, roll_back_tree

if TYPE_CHECKING:  # imported where used: only a --preview run checks a ref or fetches
    from patchkeeper.engine.checking import RefReport
    from patchkeeper.install.freshness import Freshness

DEFAULT_TIMEOUT = 3600.0
TAIL_LINES = 20
UPSTREAM_LOG = "upstream.log"  # in the run's folder: the updater's output, whoever reads it
# Outcomes after which a patch's content is back in the tree (or no longer needed).
BACK_IN_PLACE = (*oc.WRITES, oc.ALREADY_APPLIED, oc.UPSTREAM_HAS_IT)
SMOKE_PHASE = jr.PHASES.index("smoke") + 1
# Phase records whose rename needs no folder sync: preflight and preview change nothing (a
# record a power cut loses leaves no update to recover, which is then true), and the upstream
# phase's record is followed at once, nothing done in between, by a synced one.
UNSYNCED_RECORDS = (
    jr.PHASES.index("preflight") + 1,
    jr.PHASES.index("preview") + 1,
    jr.UPSTREAM_PHASE,
)
T = TypeVar("T")


# ---------------------------------------------------------------- result model


@dataclass
class PhaseRecord:
    number: int
    name: str
    status: str  # done, skipped, failed
    seconds: float = 0.0
    detail: str = ""


@dataclass
class CommandResult:
    """One external command (the upstream updater, a post-apply command)."""

    command: list[str]
    exit_status: int | None = None  # None: did not finish; negative: killed by that signal
    timed_out: bool = False
    error: str = ""
    seconds: float = 0.0
    tail: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.exit_status == 0 and not self.timed_out and not self.error

    def describe(self) -> str:
        if self.error:
            return self.error
        if self.timed_out:
            return f"timed out after {self.seconds:.0f}s; its process group was killed"
        if self.exit_status is not None and self.exit_status < 0:
            return f"killed by signal {-self.exit_status}"
        return f"exit {self.exit_status}"


@dataclass
class KeptFile:
    path: str
    show: str  # command that shows the user's edit of the file


@dataclass
class RestoreResult:
    ref: str | None
    restored: list[str] = field(default_factory=list)
    kept: list[KeptFile] = field(default_factory=list)
    command: str = ""  # merges the kept files in with conflict markers, for a person


@dataclass
class LeftoverAction:
    leftover: lo.Leftover
    action: str  # dropped, kept, found-before
    detail: str = ""
    backup_ref: str | None = None
    command: str = ""  # restore (kept) or undo (dropped)


@dataclass
class SmokeReport:
    status: str  # not-run (phase 8 did not run), not-configured, pass, fail, error
    detail: str = ""
    checks: list[dict[str, str]] = field(default_factory=list)
    python: dict[str, Any] | None = None  # which interpreter ran them (smoke.interpreter_facts)
    action: str = ""  # when not a pass: what is missing and the command to run next


@dataclass
class UpdateReport:
    install: Install
    run_id: str
    head_before: str
    version_before: str
    head_after: str | None = None
    version_after: str | None = None
    phases: list[PhaseRecord] = field(default_factory=list)
    preview: RefReport | None = None
    preview_fetch: Freshness | None = None  # the fetch of a remote-tracking --preview ref
    upstream: CommandResult | None = None
    leftovers: list[LeftoverAction] = field(default_factory=list)
    tree: TreeReport | None = None
    restore: RestoreResult | None = None
    smoke: SmokeReport = field(default_factory=lambda: SmokeReport("not-run"))
    post: list[CommandResult] = field(default_factory=list)
    attention: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    finished: bool = False  # False: the journal stays for `recover`
    not_done: str = ""  # why the update asked for did not happen (or not all of it)
    rolled_back: bool = False  # the tree went back to the `before` snapshot on the old HEAD
    retry: str = ""  # the command that runs this update again
    patch_set: str = ""  # the set's folder and why it was used (Workspace.patch_set_label)

    @property
    def update_done(self) -> bool:
        return not self.not_done

    @property
    def patch_results(self) -> list[oc.PatchResult]:
        if self.tree is not None:
            return self.tree.results
        return self.preview.results if self.preview else []

    def exit_code(self) -> int:
        codes = [exitcodes.ATTENTION] if self.attention else []
        if any(r.needs_a_person for r in self.patch_results):
            codes.append(exitcodes.ATTENTION)
        if any(r.outcome in oc.FAILED for r in self.patch_results):
            codes.append(exitcodes.PATCH_FAILED)
        if self.smoke.status in ("fail", "error"):
            codes.append(exitcodes.SMOKE_FAILED)
        return exitcodes.worst(*codes)


# ---------------------------------------------------------------- external commands


def run_streamed(
    command: list[str],
    cwd: Path,
    timeout: float,
    sink: BinaryIO,
    on_start: Callable[[int], None] | None = None,
    log: Path | None = None,
) -> CommandResult:
    """Run COMMAND in its own process group, its output streamed to SINK as it comes (through
    the file LOG when given, so the command never writes into a pipe that died with us)."""
    tail: deque[str] = deque(maxlen=TAIL_LINES)

    def line(raw: bytes) -> None:
        sink.write(raw)
        sink.flush()
        tail.append(raw.decode(errors="replace").rstrip("\n"))

    finished = run_in_group(
        command, cwd, timeout=timeout, on_stdout=line, on_start=on_start, log=log
    )
    return CommandResult(
        list(command),
        exit_status=finished.exit_status,
        timed_out=finished.timed_out,
        error=finished.start_error,
        seconds=finished.seconds,
        tail=list(tail),
    )


# ---------------------------------------------------------------- smoke


def run_smoke_checks(
    workspace: Workspace,
    results: list[oc.PatchResult],
    progress: Callable[[str, str], None],
    version: VersionInfo | None = None,
) -> SmokeReport:
    """The smoke checks the patches in place name; none named is `not-configured`: never a
    pass, though not a failure either. VERSION, when the caller has it, is the install's (it
    is not worked out again)."""
    ws = workspace
    ran = run_for_patches(ws.install, ws.settings, ws.patch_set, results, progress, version)
    checks, python = ran.results, interpreter_facts(ran.python)
    if not checks:
        why = "no smoke check named by the patches in place"
        return SmokeReport("not-configured", why, python=python)
    status = worst_verdict(check.verdict for check in checks)
    detail = ", ".join(
        f"{c.name} {c.verdict}" + (f" ({c.detail})" if c.detail else "") for c in checks
    )
    failing = [c.name for c in checks if c.verdict != "pass"]
    action = _smoke_action(ws, ran.python, status, failing) if failing else ""
    listed = [{"name": c.name, "verdict": c.verdict, "detail": c.detail} for c in checks]
    return SmokeReport(status, detail, listed, python, action)


def _smoke_action(ws: Workspace, python: Interpreter, status: str, failing: list[str]) -> str:
    """One line: which check did not pass, why when it is the interpreter, what to run next."""
    again = nextstep.command("smoke", install=ws.install.path, patches=ws.patch_set.root)
    config = ws.settings.source or ws.patch_set.root / CONFIG_NAME
    if not python.found:
        return (
            f"smoke could not check: interpreter {python.path} not found ([install] python in "
            f"{config}); fix it, then run: {again}"
        )
    if not python.installs_own:
        return (
            f"smoke could not check: it ran under patchkeeper's own interpreter {python.path} "
            f"(no [install] python set and no venv in the install); set [install] python in "
            f"{config}, then run: {again}"
        )
    word = "could not check" if status == "error" else "failed"
    return f"smoke check {', '.join(failing)} {word}; see why with: {again}"


# ---------------------------------------------------------------- the run


@dataclass
class UpdateOptions:
    args: tuple[str, ...] = ()
    timeout: float | None = None
    preview: str | None = None
    force: bool = False
    as_json: bool = False


def _sink(as_json: bool) -> BinaryIO:
    """Progress and the updater's output go to stderr, in text mode too: stdout carries only
    the report (or the JSON document), never mixed with them."""
    return sys.stderr.buffer


def _meanwhile(work: Callable[..., T], *args: Any, **kwargs: Any) -> Callable[[], T]:
    """Start WORK (a git process, say) in a thread; the function returned waits for its
    answer and gives it back, or raises what it raised."""
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, work(*args, **kwargs)))
        except BaseException as exc:  # handed to whoever waits for the answer
            outcome.append((False, exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def answer() -> T:
        thread.join()
        done, value = outcome[0]
        if not done:
            raise value
        return value

    return answer


Entry = tuple[str, str] | None  # (mode, blob) of a path in a tree, None where it is absent


def _tree_changes(repo: Path, old: str, new: str) -> dict[str, tuple[Entry, Entry]]:
    """Each path that differs between trees OLD and NEW, with its entry on either side."""
    fields = git.run(["diff-tree", "-r", "-z", "--no-renames", old, new], repo).stdout.split(b"\0")
    changes: dict[str, tuple[Entry, Entry]] = {}
    for header, name in zip(fields[0::2], fields[1::2], strict=False):
        if header.startswith(b":"):
            old_mode, new_mode, old_sha, new_sha, _ = header[1:].decode().split(" ")
            path = name.decode(errors="surrogateescape")
            changes[path] = (_entry(old_mode, old_sha), _entry(new_mode, new_sha))
    return changes


def _entry(mode: str, sha: str) -> Entry:
    return None if set(mode) == {"0"} else (mode, sha)


def _written_exactly(
    sections: list[tuple[str, bytes, list[bytes]]], changed: dict[str, tuple[Entry, Entry]]
) -> bool:
    """Whether each changed path is what one recorded diff section made of HEAD's entry,
    told by the full blob ids and modes of the section's header; any other header (a path
    two records touch, a mode change alone, a rename) says no, and the diffs are applied."""
    seen: set[str] = set()
    for path, header, _ in sections:
        if path in seen:
            return False
        seen.add(path)
        sides = _header_sides(header)
        if sides is None or changed.get(path) != sides:
            return False
    return seen == set(changed)


def _header_sides(header: bytes) -> tuple[Entry, Entry] | None:
    """(before, after) of a `git diff --full-index` file header, or None when it does not
    name both sides' blobs and modes."""
    modes: dict[str, str] = {}
    blobs: tuple[str, str] | None = None
    for raw in header.split(b"\n")[1:]:
        line = raw.decode(errors="surrogateescape")
        word, _, rest = line.partition(" ")
        if line.startswith(("--- ", "+++ ")) or not line:
            continue
        if word == "index":
            ids, _, mode = rest.partition(" ")
            old_sha, _, new_sha = ids.partition("..")
            if len(old_sha) < 40 or len(old_sha) != len(new_sha):
                return None
            blobs = (old_sha, new_sha)
            if mode:
                modes.setdefault("old", mode)
                modes.setdefault("new", mode)
        elif line.startswith(("new file mode ", "deleted file mode ", "old mode ", "new mode ")):
            side = "old" if line.startswith(("deleted", "old")) else "new"
            modes[side] = line.rsplit(" ", 1)[1]
        else:
            return None  # rename, copy, similarity, binary without ids: not told by header
    if blobs is None:
        return None
    zero = "0" * len(blobs[0])
    before = None if blobs[0] == zero else (modes.get("old", ""), blobs[0])
    after = None if blobs[1] == zero else (modes.get("new", ""), blobs[1])
    if (before is not None and not before[0]) or (after is not None and not after[0]):
        return None
    return before, after


class UpdateRun:
    """One update (or the rest of one, for `recover`), phase by phase."""

    def __init__(
        self, workspace: Workspace, lock: InstallLock, options: UpdateOptions, journal: jr.Journal
    ) -> None:
        self.ws = workspace
        self.install = workspace.install
        self.state_dir = workspace.install.state_dir
        self.lock = lock
        self.options = options
        self.journal = journal
        self.sink = _sink(options.as_json)
        self.resumed = False  # True when `recover` finishes a run another process started
        self.report = UpdateReport(self.install, journal.id, journal.old_head, journal.old_version)
        self.report.patch_set = workspace.patch_set_label
        # A journal written before runs recorded it: the same update, without its options.
        self.report.retry = journal.extra.get("retry") or retry_command(workspace, UpdateOptions())

    # -- helpers

    def say(self, line: str) -> None:
        self.sink.write(f"patchkeeper: {line}\n".encode())
        self.sink.flush()

    def phase(self, number: int, body: Callable[[], str]) -> None:
        name = jr.phase_name(number)
        sync = False if number in UNSYNCED_RECORDS else None  # None: the journal's own rule
        jr.begin_phase(self.state_dir, self.journal, number, then_sync_folder=sync)
        self.lock.set_phase(name)
        self.say(f"[{number}/{len(jr.PHASES)}] {name}")
        started = time.monotonic()
        record = PhaseRecord(number, name, "done")
        self.report.phases.append(record)
        try:
            record.detail = body()
        except BaseException:
            record.status = "failed"
            raise
        finally:
            record.seconds = round(time.monotonic() - started, 3)

    def skip(self, number: int, why: str) -> None:
        """A phase that does not run, said in the progress like one that does (no jump from
        [1/10] to [3/10]); a skipped smoke phase reports `not-run`, never `not-configured`."""
        name = jr.phase_name(number)
        self.say(f"[{number}/{len(jr.PHASES)}] {name}: skipped ({why})")
        self.report.phases.append(PhaseRecord(number, name, "skipped", 0, why))
        if number == SMOKE_PHASE:
            self.report.smoke = SmokeReport("not-run", why)

    # -- phases 1-4

    def preflight(self) -> str:
        check_symlinks(self.install, self.ws.patch_set)  # refused before anything changes
        leftovers = lo.find_leftovers(self.install, self.ws.patch_set)
        for item in leftovers:
            self.report.leftovers.append(LeftoverAction(item, "found-before"))
        # Saved with the next phase's record: preflight changes nothing a crash could leave.
        self.journal.extra["leftovers_before"] = [item.id for item in leftovers]
        return f"HEAD {self.journal.old_head[:12]}, version {self.journal.old_version}"

    def preview(self) -> bool:
        """Phase 2; False when the update must stop here (a patch would not apply)."""
        ref = self.options.preview
        if ref is None:
            self.skip(2, "no --preview REF")
            return True
        stop = False

        def body() -> str:
            nonlocal stop
            from patchkeeper.engine.checking import check_ref

            problem = self._freshen(ref)
            if problem:
                stop = True
                return problem
            self.report.preview = check_ref(
                self.install.path, self.ws.patch_set, ref, self.ws.settings.version_file
            )
            failed = [r.name for r in self.report.preview.results if r.outcome in oc.FAILED]
            if failed and not self.options.force:
                stop = True
                self.report.not_done = f"stopped at its preview of {ref}"
                self.report.attention.append(
                    f"{', '.join(failed)} would not apply on {ref}: nothing was changed; "
                    f"refresh the patch for {ref} first, or update anyway: "
                    + self._forced_command(ref)
                )
                return f"{', '.join(failed)} would not apply on {ref}: stopped (use --force)"
            return f"{ref}: " + (f"{', '.join(failed)} would not apply" if failed else "clean")

        self.phase(2, body)
        return not stop

    def _freshen(self, ref: str) -> str:
        """Fetch REF's branch first when it is a remote-tracking ref, so the preview never
        passes on stale data (freshness.py). When the fetch fails: stop, saying how old the ref
        is and how to preview it as it is (--force), or with --force go on with a note."""
        from patchkeeper.install.freshness import FETCH_TIMEOUT, freshen

        timeout = min(self.options.timeout or DEFAULT_TIMEOUT, FETCH_TIMEOUT)
        fresh = freshen(self.install.path, ref, timeout)
        self.report.preview_fetch = fresh
        if fresh is None or fresh.fetched:
            return ""
        stale = (
            f"could not fetch {fresh.remote} to preview {ref} ({fresh.error}); {ref} was last "
            f"fetched {fresh.age()} ({(fresh.before or '?')[:12]})"
        )
        if self.options.force:
            self.report.notes.append(f"{stale}: previewed as it is (--force)")
            return ""
        forced = self._forced_command(ref)
        self.report.not_done = f"could not fetch {fresh.remote} to preview {ref}"
        self.report.attention.append(
            f"{stale}, so a preview would judge stale data: nothing was changed; retry once "
            f"{fresh.remote} can be reached, or preview it as it is and go on: {forced}"
        )
        return f"could not fetch {fresh.remote}: stopped before touching anything"

    def _forced_command(self, ref: str) -> str:
        """This update again, going on past its preview of REF (--force)."""
        return nextstep.command(
            "update",
            "--preview",
            ref,
            "--force",
            *(["--timeout", f"{self.options.timeout:g}"] if self.options.timeout else []),
            install=self.install.path,
            patches=self.ws.patch_set.root,
            rest=self.options.args,
        )

    def set_aside(self) -> str:
        """Phase 3: snapshot the tree, take the patches out, keep the user's edits in a ref."""
        head, repo = self.journal.old_head, self.install.path
        # Asked while the work tree is read (neither writes the index the snapshot is read
        # into): HEAD's tree, and whether the install's index holds what HEAD does not.
        head_tree_of = _meanwhile(trees.tree_of, repo, head)
        index_check = _meanwhile(git.run, ["diff", "--cached", "--quiet"], repo, check=False)
        records = load_applied(self.state_dir)
        snapshot = trees.worktree_tree(self.install, self._recorded_paths(records))
        head_tree, index_dirty = head_tree_of(), index_check()
        if snapshot == head_tree and not records and index_dirty.returncode == 0:
            return "the tree is clean: nothing to set aside"
        self._backup_state()
        before = trees.commit_tree(
            self.install.path,
            snapshot,
            head,
            f"patchkeeper: work tree before update {self.journal.id}",
        )
        self._set_ref("before", before)
        jr.checkpoint("3.1")
        edits_tree = self._strip_patches(snapshot, head_tree, records)
        if edits_tree != head_tree:
            edits = trees.commit_tree(
                self.install.path,
                edits_tree,
                head,
                f"patchkeeper: your edits, set aside by update {self.journal.id}",
            )
            self._set_ref("edits", edits)
        jr.checkpoint("3.2")
        save_applied(self.state_dir, {}, {})
        jr.checkpoint("3.3")
        write_trees(self.install.path, self.state_dir, "update (set-aside)", snapshot, head_tree)
        jr.checkpoint("3.4")
        if index_dirty.returncode != 0 or not plain_index(self.install.git_dir / "index"):
            git.run(["reset", "-q"], self.install.path)  # else the index is HEAD's already
        unchanged = edits_tree == head_tree
        changed = [] if unchanged else trees.changed_paths(repo, head_tree, edits_tree)
        kept = f"your edits ({len(changed)} file(s)) in {self.journal.edits_ref}"
        return f"took out {len(records)} patch(es); " + (kept if changed else "no edits of yours")

    def _recorded_paths(self, records: dict) -> set[str]:
        """The files patchkeeper's records created: in the snapshot even when ignored (a file
        that was there before is tracked, and `add -A` takes it anyway)."""
        return {
            path
            for record in records.values()
            for path, header, _ in split_hunks(written_diff(self.state_dir, record))
            if b"\nnew file mode " in header
        }

    def _set_ref(self, what: str, commit: str) -> None:
        ref = self.journal.ref(what)
        git.run(["update-ref", ref, commit], self.install.path)
        setattr(self.journal, f"{what}_ref", ref)
        jr.save(self.state_dir, self.journal)

    def _backup_state(self) -> None:
        target = self.journal.run_dir(self.state_dir) / STATE_BACKUP
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        if (self.state_dir / APPLIED_FILE).is_file():
            shutil.copy2(self.state_dir / APPLIED_FILE, target / APPLIED_FILE)
        if (self.state_dir / WRITTEN_DIR).is_dir():
            shutil.copytree(self.state_dir / WRITTEN_DIR, target / WRITTEN_DIR)

    def _strip_patches(self, snapshot: str, head_tree: str, records: dict) -> str:
        """The snapshot without what patchkeeper wrote (latest first); drifted content stays."""
        order = [p.name for p in self.ws.patch_set.patches]
        order += sorted(set(records) - set(order))
        not_reversed: dict[str, set[str]] = {}
        names = [name for name in reversed(order) if name in records]
        diffs = {name: written_diff(self.state_dir, records[name]) for name in names}
        if not names:
            return snapshot  # nothing of patchkeeper's to take out
        written = all(records[name].outcome in oc.WRITES for name in names)
        if self._only_patches(snapshot, head_tree, names, diffs, written=written):
            return head_tree
        with scratch_index(self.install.path) as index:
            index.read_tree(snapshot)
            # All in one `git apply` (latest first); one by one only when that fails.
            whole = b"".join(diffs[name] for name in names)
            if not all(d.endswith(b"\n") for d in diffs.values()) or (
                whole and index.apply(whole, "--reverse").returncode != 0
            ):
                for name in names:
                    if index.apply(diffs[name], "--reverse").returncode != 0:
                        not_reversed[name] = {path for path, _, _ in split_hunks(diffs[name])}
            edits_tree = index.write_tree()
        changed = set(trees.changed_paths(self.install.path, head_tree, edits_tree))
        for name, files in not_reversed.items():
            if files & changed:
                shown = ", ".join(sorted(files & changed))
                self.report.notes.append(
                    f"{name} was changed by hand since it was applied ({shown}): "
                    "kept with your edits"
                )
            else:
                self.report.notes.append(f"{name} was recorded but is no longer in the tree")
        return edits_tree

    def _only_patches(
        self,
        snapshot: str,
        head_tree: str,
        names: list[str],
        diffs: dict[str, bytes],
        *,
        written: bool,
    ) -> bool:
        """Whether the snapshot is HEAD plus exactly what the records wrote, told from their
        paths alone (no whole-tree index): taking them out then leaves HEAD's tree. WRITTEN:
        every diff is one patchkeeper made (git's own, whose blob ids are the truth), so the
        blob ids alone can tell; an adopted patch file's diff is applied."""
        sections = [section for name in names for section in split_hunks(diffs[name])]
        paths = sorted({path for path, _, _ in sections})
        if not paths or not all(diff.endswith(b"\n") for diff in diffs.values()):
            return False
        changed = _tree_changes(self.install.path, head_tree, snapshot)
        if not set(changed) <= set(paths):
            return False
        if written and _written_exactly(sections, changed):
            return True  # each file is the blob its record wrote, on HEAD's blob: no apply
        with scratch_index(self.install.path, private_objects=True) as index:
            index.load_ref(snapshot, paths)
            whole = b"".join(diffs[name] for name in names)
            return index.apply(whole, "--reverse").returncode == 0 and index.same_as(
                head_tree, paths
            )

    def upstream(self) -> str:
        command = [*self.ws.settings.update_command, *self.options.args]
        timeout = self.options.timeout or self.ws.settings.update_timeout or DEFAULT_TIMEOUT
        self.say(f"running {' '.join(command)} (in {self.install.path}, timeout {timeout:g}s)")

        def started(pid: int) -> None:
            from patchkeeper.install.lock import process_start_time

            # The leader's start time: `recover` judges "still running" by this very process,
            # not by whatever else (a daemon it left, a reused pgid) is in the group.
            self.journal.upstream_pgid = pid
            self.journal.upstream_start_time = process_start_time(pid)
            # The file is synced, the folder is not: these facts tell a live updater from a
            # dead one after a crash of ours; after a power cut no process of before is left.
            jr.save(self.state_dir, self.journal, then_sync_folder=False)

        # Said before it starts: a crash before `started` has recorded the pid must not read as
        # "the upstream command never ran" (recover then rolls back as if it may have run).
        self.journal.extra["upstream_starting"] = True
        jr.save(self.state_dir, self.journal)
        run_dir = self.journal.run_dir(self.state_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        log = run_dir / UPSTREAM_LOG
        result = run_streamed(command, self.install.path, timeout, self.sink, started, log)
        jr.checkpoint("4.1")
        self.report.upstream = result
        self.journal.upstream_exit = result.exit_status
        self.journal.upstream_ok = result.ok
        self.journal.extra["upstream_said"] = result.describe()
        # Phase 5's record, next and with nothing done in between, syncs the folder.
        jr.save(self.state_dir, self.journal, then_sync_folder=False)
        return result.describe()

    # -- phases 5-10 (also how `recover` finishes a run)

    def leftovers(self) -> str:
        new = lo.new_stash_shas(self.install, self.journal.stash_top, _epoch(self.journal))
        before = set(self.journal.extra.get("leftovers_before", []))
        self.report.leftovers = []
        found = lo.find_leftovers(
            self.install, self.ws.patch_set, new_stashes=new, exclude_run=self.journal.id
        )
        for item in found:
            action = LeftoverAction(item, "found")
            if item.id not in before:
                item.notes.append("left by this update's upstream command")
            self.report.leftovers.append(action)
        # Whatever its message, a stash this run reports stays a leftover until it is settled.
        lo.remember_stashes(
            self.install, [a.leftover for a in self.report.leftovers], self.journal.id
        )
        summary = ", ".join(
            f"{a.leftover.id} {a.leftover.classification}" for a in self.report.leftovers
        )
        return summary or "nothing left behind"

    def blocked(self) -> tuple[str, str] | None:
        """Why nothing may be written now, and what must happen first: a git lock file that a
        live process may hold (a stale one is removed: gitlocks.py), or a git operation the
        updater left unfinished (applying now would mix into it)."""
        for lock in gitlocks.lock_files(self.install):
            holders = gitlocks.holders(self.install, lock, self.journal.upstream_pgid)
            if holders:
                who = "; ".join(holder.describe() for holder in holders)
                return f"{lock} is held by {who}, which may still change the install", (
                    "once it has ended"
                )
            lock.unlink(missing_ok=True)
            self.report.notes.append(
                f"removed {lock}: no live process holds it (the updater's process group has "
                "ended and no git works in the install)"
            )
        operation = operation_in_progress(self.install)
        if operation is None:
            return None
        if self.install.head() == self.journal.old_head:
            self.journal.extra["left_unfinished"] = operation
            jr.save(self.state_dir, self.journal)
        return operation, "finish or abort it with git"

    def not_done(self) -> str:
        """Why the update asked for did not happen (or not all of it), or "" when it did."""
        journal = self.journal
        unmoved = self.install.head() == journal.old_head
        if journal.upstream_ok is False:
            said = journal.extra.get("upstream_said") or f"exit {journal.upstream_exit}"
            return f"the upstream command failed ({said})"
        if journal.upstream_ok is None:  # patchkeeper died while the upstream command ran
            return "the upstream command was interrupted before it finished" if unmoved else ""
        left = journal.extra.get("left_unfinished")
        if left and unmoved:
            return f"the upstream command left this unfinished, and it was given up: {left}"
        return ""

    def apply(self) -> str:
        self._learn_release_tags()
        try:
            check_symlinks(self.install, self.ws.patch_set)
        except UserError as exc:  # the new release made a folder a symlink: never stuck
            return self._not_applied(str(exc))
        # What was in place before set-aside took it out: a fix past its range is `expired`.
        backup = self.journal.run_dir(self.state_dir) / STATE_BACKUP
        self.report.tree = apply_patches(
            self.install,
            self.ws.settings,
            self.ws.patch_set,
            was_in_place=set(load_applied(backup)),
        )
        self._keep_records_of_undecided(backup)
        jr.checkpoint("6.1")
        results = self.report.tree.results
        for result in results:
            if result.outcome == oc.UPSTREAM_HAS_IT:
                self.report.notes.append(
                    f"{result.name}: upstream has it now: retire the patch (drop it from series)"
                )
            step = nextstep.for_patch(result, self.install.path, self.ws.patch_set.root)
            if step is not None:
                self.report.attention.append(step)
        self._settle_leftovers({r.name: r.outcome for r in results})
        return ", ".join(f"{r.name} {r.outcome}" for r in results) or "the patch set is empty"

    def _not_applied(self, why: str) -> str:
        """Phase 6 when no patch can be written: each is `invalid` (exit 3), and the run
        goes on (your edits come back), so recover is never stuck on it."""
        results = [
            oc.PatchResult(patch.name, oc.INVALID, None, why) for patch in self.ws.patch_set.patches
        ]
        version = install_version(self.install, self.ws.settings)
        self.report.tree = TreeReport(self.install, self.install.head(), version, results)
        again = nextstep.command("apply", install=self.install.path, patches=self.ws.patch_set.root)
        self.report.attention.append(f"{why}; no patch was applied: fix it, then run: {again}")
        return "no patch applied: " + why

    def _keep_records_of_undecided(self, backup: Path) -> None:
        """An expired or undecided fix stays recorded (its content is out of the tree), so
        later runs still know it was in place, and `unapply` can retire it on purpose."""
        assert self.report.tree is not None
        records, before = load_applied(self.state_dir), load_applied(backup)
        kept = {
            result.name: before[result.name]
            for result in self.report.tree.results
            if result.needs_a_person and result.name in before and result.name not in records
        }
        if kept:
            diffs = {name: written_diff(backup, record) for name, record in kept.items()}
            save_applied(self.state_dir, {**records, **kept}, diffs)

    def _learn_release_tags(self) -> None:
        """Name the new version right (variants depend on it) though the updater fetched no tags.

        Only `git describe` needs the release tags; it is asked only when neither
        [install] version_command nor version_file gives a version. So origin is not asked (a
        network round trip) when a version file states one in the new release, nor when the
        new HEAD carries a release tag here already (the updater's fetch brought it)."""
        version_file = self.ws.settings.version_file
        if version_file and version_from_worktree(self.install.path, version_file).version:
            return
        if git.out(["tag", "--points-at", "HEAD", "--list", "v[0-9]*"], self.install.path):
            return
        try:
            adopted = adopt_remote_tags(self.install.path)
        except git.GitError as exc:
            self.report.notes.append(f"could not list origin's tags ({exc}): the version may lag")
            return
        if adopted:
            self.report.notes.append(f"tagged commits the update brought in: {', '.join(adopted)}")

    def _settle_leftovers(self, outcomes: dict[str, str]) -> None:
        """Drop patch-content leftovers whose patches are back (after a backup); flag the rest."""
        for action in self.report.leftovers:
            item = action.leftover
            back = item.patches and all(outcomes.get(n) in BACK_IN_PLACE for n in item.patches)
            if item.classification == lo.PATCH_CONTENT and back:
                action.backup_ref = heal.drop(self.install, item)
                action.action = "dropped"
                action.detail = "held only patch content, which is back in place"
                action.command = heal.undo_command(self.install, item)
                continue
            action.action = "kept"
            if item.kind == lo.UNMERGED:
                action.detail = "unmerged paths: resolve with git"
            elif item.classification == lo.PATCH_CONTENT:
                action.detail = "holds patch content that is not back in place"
            else:
                action.detail = f"holds {item.classification.replace('-', ' ')}"
            action.command = item.restore_command(self.install, patches=self.ws.patch_set.root)
            self.report.attention.append(
                f"leftover {item.id} ({item.kind}, {item.classification}) kept: {action.command}"
            )

    def restore(self) -> str:
        ref = self.journal.edits_ref
        self.report.restore = result = RestoreResult(ref)
        if ref is None:
            return "no edits of yours to restore"
        if git.rev_parse(self.install.path, ref) is None:  # a resumed run restored them already
            return f"your edits were restored before ({ref} is gone)"
        base = self.journal.old_head
        # Only the paths the edits ref holds are merged back: the rest of the work tree is
        # neither read (no whole-tree `git add`) nor reached by the merge.
        repo = self.install.path
        paths = trees.changed_paths(repo, base, ref)
        base_commit = trees.commit_tree(repo, ref_paths_tree(repo, base, paths), None, "base")
        preview = trees.merge_preview(
            repo, base_commit, worktree_paths_tree(repo, paths), ref_paths_tree(repo, ref, paths)
        )
        result.restored = write_merge(self.install, preview, command="update (restore)")
        jr.checkpoint("7.1")
        for path in preview.conflicts:
            show = nextstep.shell(
                "git", "-C", self.install.path, "diff", base[:12], ref, "--", path
            )
            result.kept.append(KeptFile(path, show))
        if result.kept:
            leftover = lo.Leftover(
                git.out(["rev-parse", ref], self.install.path)[:10], lo.SET_ASIDE, ref, None, None
            )
            result.command = leftover.restore_command(
                self.install, markers=True, patches=self.ws.patch_set.root
            )
            self.report.attention.append(
                f"{len(result.kept)} file(s) of your edits conflict with the new version; "
                f"they stay in {ref}; merge them with conflict markers: {result.command}"
            )
        else:
            git.run(["update-ref", "-d", ref], self.install.path)
            self.journal.edits_ref = None
            jr.save(self.state_dir, self.journal)
        return f"restored {len(result.restored)} file(s), kept {len(result.kept)} in {ref}"

    def smoke(self) -> str:
        tree = self.report.tree
        self.report.smoke = run_smoke_checks(
            self.ws,
            tree.results if tree else [],
            lambda name, text: self.say(f"smoke {name}: {text}"),
            tree.version if tree else None,
        )
        if self.report.smoke.action:
            self.report.attention.append(self.report.smoke.action)
        return f"smoke: {self.report.smoke.status}"

    def post(self) -> str:
        timeout = self.options.timeout or self.ws.settings.update_timeout or DEFAULT_TIMEOUT
        for command in self.ws.settings.post_apply:
            self.say(f"running {' '.join(command)}")
            result = run_streamed(list(command), self.install.path, timeout, self.sink)
            self.report.post.append(result)
            if not result.ok:
                self.report.attention.append(
                    f"post-apply command {' '.join(command)} failed ({result.describe()})"
                )
        return f"{len(self.report.post)} command(s)"

    def roll_back(self) -> str:
        """Phase 6 when the update did not happen: the `before` snapshot, exactly, on the old
        HEAD (rollback.py); what a half-done checkout left is undone, nothing else is lost."""
        # Exact in the update's own run (patchkeeper held the install all along); a resumed
        # run keeps what changed since the crash in place (it may be the operator's).
        exact = not self.resumed
        result = roll_back_tree(self.install, self.journal, updater_ran=True, exact=exact)
        jr.checkpoint("6.1")
        self.report.rolled_back = True
        self.report.tree = worktree_status(self.install, self.ws.settings, self.ws.patch_set)
        self._settle_leftovers({r.name: r.outcome for r in self.report.tree.results})
        where = f"git -C {nextstep.shell(self.install.path)}"
        if result.checkout:
            self.report.notes.append(
                f"undid what the interrupted checkout left: {len(result.checkout)} file(s) of "
                "the new release written or removed"
            )
        if result.foreign and result.found_ref:
            found = git.out(["rev-parse", result.found_ref], self.install.path)[:10]
            item = lo.Leftover(found, lo.SET_ASIDE, result.found_ref, None, None)
            restore = item.restore_command(self.install, patches=self.ws.patch_set.root)
            self.report.attention.append(
                f"changed while the upstream command ran, not by patchkeeper and not as in the "
                f"release it fetched: {', '.join(result.foreign)}; set aside in "
                f"{result.found_ref} (leftover {found}) and rolled back; if they are wanted, "
                f"merge them back with: {restore}"
            )
        elif result.foreign:
            self.report.attention.append(
                f"changed while the upstream command ran or since, not by patchkeeper and not "
                f"as in the release it fetched, so kept as they are: "
                f"{', '.join(result.foreign)}; look at them with: {where} status -- "
                f"{nextstep.shell(*result.foreign)}"
            )
        if result.conflicts:
            self.journal.extra["keep_before"] = True
            jr.save(self.state_dir, self.journal)
            ref = self.journal.ref("before")
            self.report.attention.append(
                f"changed since the update started, so left as they are: "
                f"{', '.join(result.conflicts)}; their content before the update is in {ref}; "
                f"compare with: {where} diff {ref} -- {nextstep.shell(*result.conflicts)}"
            )
        if self.journal.edits_ref:  # the snapshot holds the edits: their ref is not needed
            git.run(["update-ref", "-d", self.journal.edits_ref], self.install.path, check=False)
            self.journal.edits_ref = None
            jr.save(self.state_dir, self.journal)
        return (
            f"back to the snapshot of the work tree before the update: {len(result.written)} "
            f"file(s) put back, {len(result.checkout)} of a half-done checkout undone"
        )

    def finish(self) -> None:
        """Phase 10: the run is complete; the snapshot is no longer needed."""
        self.report.head_after, self.report.version_after = self._where_it_ended()
        if self.journal.before_ref and not self.journal.extra.get("keep_before"):
            git.run(["update-ref", "-d", self.journal.before_ref], self.install.path, check=False)
        shutil.rmtree(self.journal.run_dir(self.state_dir) / STATE_BACKUP, ignore_errors=True)
        self._report_own_leftovers()
        self.report.finished = True
        # For status and doctor, later: whether the update asked for happened, and how to retry.
        self.journal.extra["exit_code"] = self.report.exit_code()
        self.journal.extra["not_done"] = self.report.not_done
        self.journal.extra["rolled_back"] = self.report.rolled_back
        self.journal.extra["head_after"] = self.report.head_after
        # Not the folder: the rename into the run folder next is not synced either, and a
        # power cut that loses both leaves an unfinished run, which `recover` finishes again.
        jr.save(self.state_dir, self.journal, then_sync_folder=False)
        jr.finish(self.state_dir, self.journal)

    def _where_it_ended(self) -> tuple[str | None, str]:
        """HEAD and the version after the run. Phase 6 worked both out; they are asked again
        only when something may have changed them since: a smoke check or a post-apply command
        ran, or edits of yours came back (a version file may be among them)."""
        tree, report = self.report.tree, self.report
        restored = report.restore is not None and bool(report.restore.restored)
        if tree is not None and tree.head and not (report.smoke.checks or report.post or restored):
            return tree.head, str(tree.version)
        return self.install.head(), str(install_version(self.install, self.ws.settings))

    def _report_own_leftovers(self) -> None:
        """The refs this run leaves behind (edits that conflicted, a kept snapshot) are
        leftovers once it is finished: listed here as `patchkeeper leftovers` lists them."""
        if not (self.journal.edits_ref or self.journal.extra.get("keep_before")):
            return  # nothing of this run's is left: no ref lookup
        for item in lo.run_leftovers(self.install, self.ws.patch_set, self.journal.id):
            action = LeftoverAction(item, "kept", "left by this update for you")
            action.command = item.restore_command(self.install, patches=self.ws.patch_set.root)
            self.report.leftovers.append(action)

    def _blocked_report(self, what: str, how: str) -> UpdateReport:
        """Stop before phase 6; the journal stays, so `recover` finishes the run later."""
        for number in range(6, 11):
            self.skip(number, what)
        failed = self.journal.upstream_ok is False
        after = f" (after {self.not_done()})" if failed else ""
        recover = nextstep.command(
            "recover", install=self.install.path, patches=self.ws.patch_set.root
        )
        self.report.attention.append(
            f"{what}{after}: patches not applied, your edits stay in "
            f"{self.journal.edits_ref or '(none)'}; {how}, then run: {recover}"
        )
        self.report.head_after = self.install.head()
        return self.report

    def complete(self) -> UpdateReport:
        """Phases 5-10: find leftovers, apply, restore, smoke, post, report.

        When the update asked for did not happen and HEAD is where it was (the upstream
        command failed, timed out, was killed, or its merge was given up), phase 6 rolls the
        tree back to the `before` snapshot instead of applying the patch set again, and the
        run ends with the command that retries it.
        """
        self.phase(5, self.leftovers)
        blocked = self.blocked()
        if blocked:
            return self._blocked_report(*blocked)
        self.report.not_done = self.not_done()
        back = bool(self.report.not_done) and self.install.head() == self.journal.old_head
        if back:
            self.phase(6, self.roll_back)
            self.phase(7, lambda: "your edits came back with the snapshot")
        else:
            self.phase(6, self.apply)
            self.phase(7, self.restore)
        self.phase(8, self.smoke)
        if self.report.not_done:
            self.skip(9, "the update did not happen" if back else "the upstream command failed")
        else:
            self.phase(9, self.post)
        if back:
            self.report.attention.insert(
                0,
                f"the update did not happen: {self.report.not_done}; the install is back at "
                f"{self.journal.old_version} ({self.journal.old_head[:12]}) with its patches and "
                f"your edits as they were; retry: {self.report.retry}",
            )
        elif self.report.not_done:
            self.report.attention.insert(
                0,
                f"the update did not finish: {self.report.not_done} after moving HEAD to "
                f"{(self.install.head() or '?')[:12]}; its later steps may not have run; "
                f"retry: {self.report.retry}",
            )
        self.phase(10, lambda: "done")
        self.finish()
        return self.report


def _epoch(journal: jr.Journal) -> float:
    return dt.datetime.fromisoformat(journal.started_at).timestamp()


def start_journal(workspace: Workspace) -> jr.Journal:
    install = workspace.install
    head = install.head()
    if head is None:
        raise PatchkeeperError(f"{install.path}: HEAD does not name a commit", exitcodes.USAGE)
    return jr.Journal(
        id=jr.new_run_id(),
        pid=os.getpid(),
        started_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        old_head=head,
        old_version=str(install_version(install, workspace.settings)),
        stash_top=lo.stash_top(install),
    )


def retry_command(workspace: Workspace, options: UpdateOptions) -> str:
    """The command that runs this update again, as it was asked for."""
    words: list[str] = ["update"]
    if options.preview:
        words += ["--preview", options.preview]
    if options.timeout:
        words += ["--timeout", f"{options.timeout:g}"]
    return nextstep.command(
        *words, install=workspace.install.path, patches=workspace.patch_set.root, rest=options.args
    )


def run_update(workspace: Workspace, lock: InstallLock, options: UpdateOptions) -> UpdateReport:
    """The whole update. The caller holds the install through `locked_for_writing`, whose
    refusals (git busy, an unfinished update) came before anything changed."""
    journal = start_journal(workspace)
    journal.extra["retry"] = retry_command(workspace, options)
    run = UpdateRun(workspace, lock, options, journal)
    try:
        run.phase(1, run.preflight)
        go_on = run.preview()
    except PatchkeeperError:  # nothing was changed yet: no journal to recover from
        (workspace.install.state_dir / jr.JOURNAL_FILE).unlink(missing_ok=True)
        raise
    if not go_on:
        for number in range(3, 10):
            run.skip(number, "stopped after preview")
        run.phase(10, lambda: "stopped before touching anything")
        run.finish()
        return run.report
    run.phase(3, run.set_aside)
    run.phase(4, run.upstream)
    return run.complete()
