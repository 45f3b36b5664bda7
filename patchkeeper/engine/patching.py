"""Apply and unapply the patch set on the install's work tree: classify, write once, record.

The work tree is written once, from the scratch tree before to the scratch tree after, by
the work tree writer (install/writer/write.py: each file old or new whatever kills us, journaled);
the install's own index is never touched.
What each patch changed is kept in the state so `unapply` reverses exactly that.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from patchkeeper.engine.classify import classify
from patchkeeper.engine.diffs import split_hunks
from patchkeeper.engine.ref_content import present_in_ref, upstream_has_in_worktree
from patchkeeper.engine.state import Classification, Recorded
from patchkeeper.engine.symlinks import check_symlinks
from patchkeeper.install.checkout.install import Install, install_version
from patchkeeper.install.plumbing import git
from patchkeeper.install.plumbing.scratch_index import ScratchIndex, scratch_index
from patchkeeper.install.records.applied import (
    AppliedRecord,
    load_applied,
    save_applied,
    written_diff,
)
from patchkeeper.install.set_choice import foreign_problem, remember
from patchkeeper.install.writer.write import write_trees
from patchkeeper.model import outcomes as oc
from patchkeeper.model.errors import EnvironmentProblem, UserError
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.model import PatchFile, PatchSet
from patchkeeper.patchset.settings import Settings
from patchkeeper.patchset.versions import VersionInfo


@dataclass
class TreeReport:
    """How the patch set stands in (or was written to) the install's work tree."""

    install: Install
    head: str | None
    version: VersionInfo
    results: list[PatchResult]
    written: bool = False
    notes: list[str] = field(default_factory=list)
    patch_set: str = ""  # the set's folder and why it was used (Workspace.patch_set_label)


def _recorded(install: Install) -> tuple[dict[str, AppliedRecord], dict[str, Recorded]]:
    records = load_applied(install.state_dir)
    return records, {
        name: Recorded(record.sha256, written_diff(install.state_dir, record))
        for name, record in records.items()
    }


def classify_worktree(
    install: Install,
    settings: Settings,
    patch_set: PatchSet,
    *,
    was_in_place: Collection[str] = (),
) -> tuple[VersionInfo, str | None, Classification, dict[str, AppliedRecord]]:
    """Classify the work tree: the version, HEAD, the classification and the records it was
    made with. WAS_IN_PLACE names patches in place before an update set them aside (the
    install's records count too): one of them that expired is never quiet."""
    check_symlinks(install, patch_set)
    version = install_version(install, settings)
    records, recorded = _recorded(install)
    # A record describes the tree of the HEAD it was made on. Once HEAD has moved (an update
    # patchkeeper did not wrap, a commit), the patch is judged afresh against what is there.
    head = install.head()
    moved = {name for name, record in records.items() if record.base != head}
    recorded = {name: r for name, r in recorded.items() if name not in moved}

    on_upstream: list[bool] = []  # asked once, and only when some patch is present

    def from_head(variant: PatchFile) -> bool:
        """Present in HEAD's commit, and HEAD is upstream's (not an operator's own commit)."""
        if not present_in_ref(install.path, "HEAD", variant):
            return False
        if not on_upstream:
            on_upstream.append(head_is_upstream(install.path))
        return on_upstream[0]

    def load(index: ScratchIndex, paths: set[str]) -> None:
        index.load_worktree(paths)

    # Upstream's content is HEAD's committed blobs: the work tree carries our own patches;
    # and a condition holds only where the work tree still has the text (what runs).
    every_variant = [v for p in patch_set.patches for v in p.variants]
    classification = classify(
        patch_set,
        install.path,
        version.version,
        load,
        upstream_ref=head,
        has_content=upstream_has_in_worktree(install.path, head, every_variant) if head else {},
        recorded=recorded,
        from_upstream=from_head,
        was_in_place={*was_in_place, *records},
    )
    for result in classification.results:
        if result.name in moved:
            base = records[result.name].base[:12]
            result.notes.append(f"recorded on {base}; HEAD has moved since: judged afresh")
    return version, head, classification, records


def head_is_upstream(repo: Path) -> bool:
    """Whether HEAD is on one of upstream's branches or tags (remote-tracking refs, tags).

    A commit the operator made on top (say, of the patched tree) is on neither: its content
    is theirs, never a sign that upstream has a fix.
    """
    containing = git.out(
        ["for-each-ref", "--count=1", "--contains", "HEAD", "refs/remotes/", "refs/tags/"], repo
    )
    return bool(containing)


def _write(install: Install, command: str, index: ScratchIndex, old: str, new: str) -> None:
    """Turn the work tree from scratch tree OLD into NEW, each file old or new (no index)."""
    write_trees(install.path, install.state_dir, command, old, new, env=index.env)


@contextmanager
def _undone_on_failure(
    install: Install, command: str, index: ScratchIndex | None, old: str | None, new: str | None
) -> Iterator[None]:
    """The record of a write that cannot be saved (disk full): the tree goes back to OLD, so
    the tree and the record never disagree."""
    try:
        yield
    except EnvironmentProblem:
        if index is not None and old and new and old != new:
            _write(install, f"{command} (undo)", index, new, old)
        raise


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def apply_patches(
    install: Install,
    settings: Settings,
    patch_set: PatchSet,
    *,
    was_in_place: Collection[str] = (),
) -> TreeReport:
    """Write every patch that applies in one step and record it (WAS_IN_PLACE: see
    `classify_worktree`)."""
    version, head_now, classification, records = classify_worktree(
        install, settings, patch_set, was_in_place=was_in_place
    )
    head = head_now or ""
    start, final, index = classification.start_tree, classification.final_tree, classification.index
    if start and final and index is not None and start != final:
        _write(install, "apply", index, start, final)
    new_diffs: dict[str, bytes] = {}
    recorded_before = dict(records)
    for result in classification.results:
        if result.needs_a_person:
            continue  # nothing was decided: the record stays, so the next run still knows
        patch = patch_set.by_name(result.name)
        selected = patch.variant_at(result.variant, patch_set.root) if patch else None
        written = classification.patch_diff(result)
        if written is None and result.outcome in oc.WRITES and result.name in recorded_before:
            # Its patch file changed, not what it writes (a header): taken out and put back,
            # the tree is as it was; recorded anew with the same diff, else the stale record
            # would say "re-applying" forever.
            written = written_diff(install.state_dir, recorded_before[result.name])
        if not result.recorded or (written is not None and result.outcome not in oc.WRITES):
            records.pop(result.name, None)  # its content is gone, or was taken out just now
        if result.outcome in oc.WRITES and selected and written is not None:
            new_diffs[result.name] = written
        elif result.outcome == oc.ALREADY_APPLIED and not result.recorded and selected:
            if not selected.diff:
                continue  # an empty patch: nothing to record or to take out later
            new_diffs[result.name] = selected.diff  # adopt: present but never recorded
        else:
            continue
        records[result.name] = AppliedRecord(
            name=result.name,
            variant=result.variant or "",
            sha256=selected.sha256,
            base=head,
            outcome=result.outcome,
            applied_at=_now(),
        )
    if new_diffs or records.keys() != recorded_before.keys():
        with _undone_on_failure(install, "apply", index, start, final):
            save_applied(install.state_dir, records, new_diffs)
        remember(install.state_dir, patch_set)  # the set these fixes come from (remembered.py)
    return TreeReport(install, head, version, classification.results, written=True)


def worktree_status(install: Install, settings: Settings, patch_set: PatchSet) -> TreeReport:
    version, head, classification, _ = classify_worktree(install, settings, patch_set)
    report = TreeReport(install, head, version, classification.results)
    for result in report.results:
        if result.outcome in oc.WRITES:
            # Not in place: said as such, never with the word of a patch that was written.
            result.would, result.outcome = result.outcome, oc.PENDING
            result.detail = f"not applied yet: apply would write it ({result.would})"
    if (foreign := foreign_problem(install, patch_set)) is not None:
        report.notes.append(foreign)
    return report


def unapply_patches(
    install: Install, settings: Settings, patch_set: PatchSet, names: tuple[str, ...] = ()
) -> TreeReport:
    """Reverse exactly what patchkeeper wrote (latest first), keeping the user's own edits."""
    records, recorded = _recorded(install)
    unknown = [n for n in names if n not in records]
    if unknown:
        raise UserError(f"{install.state_dir / 'applied.json'}: {unknown[0]!r} is not applied")
    order = [p.name for p in patch_set.patches] + sorted(
        set(records) - {p.name for p in patch_set.patches}
    )
    chosen = [n for n in reversed(order) if n in records and (not names or n in names)]
    results: list[PatchResult] = []
    paths = {path for name in chosen for path, _, _ in split_hunks(recorded[name].diff)}
    head = install.head()
    with scratch_index(install.path) as index:
        index.load_worktree(paths)
        start = index.write_tree()
        for name in chosen:
            diff, record = recorded[name].diff, records[name]
            if index.apply(diff, "--reverse").returncode == 0:
                results.append(PatchResult(name, "removed", record.variant, recorded=True))
                del records[name]
            elif record.base != head or index.apply(diff, "--check").returncode == 0:
                # Gone from the tree (a stash took it, or HEAD moved on): nothing to take
                # out, and the record goes, so the patch is no longer expected in place.
                gone = "it was no longer in the tree: only its record is removed"
                results.append(PatchResult(name, "removed", record.variant, gone, recorded=True))
                del records[name]
            else:
                results.append(
                    PatchResult(
                        name,
                        oc.DRIFTED,
                        records[name].variant,
                        "changed by hand since it was applied: left in place",
                        recorded=True,
                    )
                )
        final = index.write_tree()
        _write(install, "unapply", index, start, final)
        with _undone_on_failure(install, "unapply", index, start, final):
            save_applied(install.state_dir, records, {})
    version = install_version(install, settings)
    return TreeReport(install, install.head(), version, list(reversed(results)), written=True)
