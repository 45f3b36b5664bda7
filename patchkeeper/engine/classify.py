"""Classify a patch set against a target, each patch on top of the ones before it.

A target is the install's work tree or any ref. Its content for the touched paths is loaded
into a scratch index; each patch is tried there with `git apply --cached` (forward, reverse,
3-way, in that order, never with fuzz). The scratch index then holds the combined result of
every patch that applies, so a writer can put it into the work tree in one step.

Speed comes from asking git fewer questions, never from changing an answer:

- Batches. Patches that need no special handling are applied as ONE concatenated stream
  (`git apply` applies a stream's patches in order, each on the result of the ones before,
  and all or nothing). When the stream fails, git's words per file section say how each
  patch went (failed_stream.py): those that applied go in at once, those that failed are
  judged together on the content they failed on (reverse, 3-way, the conflict and its fuzz
  hint), a patch whose chain is in doubt waits for the next round; where git's words cannot
  be read per patch, the batch is split where git says (or halved) and the failed ones are
  tried alone. Either way the results are the one-by-one results by construction;
  `tests/test_batch.py` checks it.
- No `write-tree` per patch unless a result needs its tree: undoing a failed 3-way merge
  restores a copy of the index file; per-patch trees are taken only for a writer's records,
  and only for patches that share a file with another patch (the others' written diffs are
  their part of the combined diff).
- Reuse across refs (`TrialMemo`, for `check`): patches that share files form a group whose
  outcomes depend only on the group's patch files and the target's blobs of the group's
  files; a group seen with the same blobs on an earlier ref is not tried again.
- Private objects: the scratch work writes its blobs and trees into a temporary object
  directory (install/plumbing/scratch_index.py), so classifying adds nothing to the
  install's object store.

This module holds the driver; the steps are functions beside it, over the typed state of
state.py: batches.py (a batch, split where it fails), failed_stream.py (a failed batch read
patch by patch), could_apply.py (questions the files already answer), one_patch.py (a patch
with its record and headers), judge.py (forward, reverse, 3-way for one patch), merging.py and
merge_guard.py (the 3-way merge), conflicts.py (the failing hunks), hold_back.py (dependents
of a failed patch), memo.py (reuse across refs).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path

from packaging.version import Version

from patchkeeper.engine.batches import batchable, run_batch
from patchkeeper.engine.by_content import choose_by_content
from patchkeeper.engine.diffs import split_hunks
from patchkeeper.engine.hold_back import hold_back_dependents, rebuild
from patchkeeper.engine.memo import Pending, TrialMemo, recall, remember
from patchkeeper.engine.merging import BlobCheck
from patchkeeper.engine.one_patch import classify_patch
from patchkeeper.engine.ref_content import upstream_has_content
from patchkeeper.engine.sharing import shared_files
from patchkeeper.engine.state import Classification, Item, Judging, Recorded, TrialState
from patchkeeper.install.plumbing.scratch_index import IndexFolder, ScratchIndex, open_scratch
from patchkeeper.model import outcomes as oc
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.model import PatchFile, PatchSet

# Batches on (the default), or every patch tried alone: the same results, more git calls.
# Tests switch it off to prove the first equals the second.
BATCHES = True


def classify(
    patch_set: PatchSet,
    repo: Path,
    version: Version | None,
    load: Callable[[ScratchIndex, set[str]], None] | None = None,
    *,
    upstream_ref: str | None,
    recorded: dict[str, Recorded] | None = None,
    from_upstream: Callable[[PatchFile], bool] | None = None,
    was_in_place: Collection[str] = (),
    target_ref: str | None = None,
    trees: bool = True,
    batch: bool | None = None,
    memo: TrialMemo | None = None,
    has_content: dict[Path, str] | None = None,
    listing: Callable[[set[str]], bytes] | None = None,
) -> Classification:
    """Classify every patch of PATCH_SET in series order against the content LOAD puts in
    (or, with TARGET_REF, against that commit's content).

    UPSTREAM_REF is the commit whose blobs judge `Upstream-Has:` conditions: the ref itself
    for a ref, HEAD for the work tree, whose own content carries our patches (None: no
    commit, so no condition holds); HAS_CONTENT is their answer when the caller has it
    already. RECORDED (work tree targets) holds what patchkeeper wrote earlier: an intact one
    is `already-applied`, a damaged one `drifted`, and one whose patch file changed is taken
    out first and then tried afresh. FROM_UPSTREAM tells whether content that is already
    present came from upstream (else it is reported `already-applied`, not yet recorded); it
    is asked only about a patch whose reverse check succeeds. WAS_IN_PLACE names patches that
    were in place before (records, or the records an update set aside): one of them that no
    variant covers any more is `expired`, never a quiet `not-applicable`.

    TREES: keep what a writer needs (the combined diff, each patch's diff); without it no
    tree is written at all. BATCH: apply patches in batches (off: one by one; the results
    are the same; default: BATCHES). MEMO: reuse results across refs (TARGET_REF only, no
    records). LISTING: TARGET_REF's `ls-tree -r -z` entries of the paths asked, when the
    caller has them (scratch.TreeListings).
    """
    recorded = recorded or {}
    candidates = {p.name: p.candidates(version) for p in patch_set.patches}
    # One variant each; a fix whose variants are chosen by content has none until it is tried.
    selected = {name: found[0] if len(found) == 1 else None for name, found in candidates.items()}
    by_content = {
        name: found
        for name, found in candidates.items()
        if len(found) > 1 or (version is None and any(v.by_content for v in found))
    }
    if has_content is None:
        every_variant = [v for p in patch_set.patches for v in p.variants]
        has_content = (
            upstream_has_content(repo, upstream_ref, every_variant) if upstream_ref else {}
        )
    judging = Judging(
        version,
        recorded,
        from_upstream,
        has_content,
        frozenset(was_in_place) | recorded.keys(),
        repo,
        patch_set.root,
        upstream_ref,
    )
    scratch = IndexFolder()
    try:
        index = open_scratch(repo, scratch, private_objects=True)
        batch = BATCHES if batch is None else batch
        state = TrialState(index, judging, trees, BlobCheck(index))
        classification = _classify_set(
            state, patch_set, selected, batch=batch, load=load, target_ref=target_ref,
            memo=None if by_content else memo, listing_of=listing, by_content=by_content,
        )  # fmt: skip
    except BaseException:
        scratch.close()
        raise
    if trees:
        classification.scratch = scratch
    else:
        scratch.close_later()  # nothing of it is read any more: it goes while work goes on
    return classification


def _classify_set(
    state: TrialState,
    patch_set: PatchSet,
    selected: dict[str, PatchFile | None],
    *,
    batch: bool,
    load: Callable[[ScratchIndex, set[str]], None] | None,
    target_ref: str | None,
    memo: TrialMemo | None,
    listing_of: Callable[[set[str]], bytes] | None = None,
    by_content: dict[str, tuple[PatchFile, ...]] | None = None,
) -> Classification:
    """The target's content into the scratch index, every patch of PATCH_SET judged on it in
    series order (SELECTED: each one's variant; BY_CONTENT: the candidates of those whose
    variant is chosen by what applies), the dependents of failed ones held back."""
    judging, index = state.judging, state.index
    by_content = by_content or {}
    every = [*selected.values(), *(v for found in by_content.values() for v in found)]
    paths: set[str] = set()
    for variant in every:
        paths.update(variant.files if variant else ())
    record_paths: set[str] = set()
    for record in judging.recorded.values():
        record_paths.update(path for path, _, _ in split_hunks(record.diff))
    paths |= record_paths
    known: dict[str, PatchResult] = {}  # results reused from an earlier ref
    to_remember: list[Pending] = []
    if target_ref is not None:
        if not paths:
            listing = b""
        else:
            listing = listing_of(paths) if listing_of else index.listing(target_ref, paths)
        if memo is not None and not judging.recorded and judging.from_upstream is None:
            tried = [
                (patch, variant)
                for patch in patch_set.patches
                if (variant := selected[patch.name]) is not None
                and judging.upstream_has(variant) is None
            ]
            known, to_remember, listing = recall(memo, tried, listing)
        index.clear()
        index.add_entries(listing)
    elif load is not None:
        load(index, paths)
    start = index.write_tree() if state.trees else None
    shared = shared_files(every, record_paths)
    results = _judge_in_order(
        state, patch_set, selected, known, shared, batch=batch, by_content=by_content
    )
    if memo is not None:
        remember(memo, to_remember, results)
    for result, patch in zip(results, patch_set.patches, strict=True):
        if (variant := selected[patch.name]) is not None:
            result.variant = str(variant.path.relative_to(patch_set.root))
        elif patch.name in by_content:  # none chosen: its files still hold back dependents
            selected[patch.name] = by_content[patch.name][0]
    held = hold_back_dependents(patch_set, selected, results)
    if held and state.trees:
        assert start is not None
        rebuild(index, start, results, state.batched)
    final = index.write_tree() if state.trees else None
    return Classification(
        index.repo, results, start, final, index if state.trees else None,
        batched=state.batched if state.trees else {},
    )  # fmt: skip


def _judge_in_order(
    state: TrialState,
    patch_set: PatchSet,
    selected: dict[str, PatchFile | None],
    known: dict[str, PatchResult],
    shared: set[str],
    *,
    batch: bool,
    by_content: dict[str, tuple[PatchFile, ...]],
) -> list[PatchResult]:
    """Each patch's result in series order: KNOWN from an earlier ref, batchable ones gathered
    into batches, any other alone (the pending batch runs first, so order is kept). A patch
    chosen BY_CONTENT gets its chosen variant in SELECTED."""
    results: list[PatchResult] = []
    pending: list[Item] = []
    for patch in patch_set.patches:
        variant = selected[patch.name]
        if patch.name in known:
            results.append(known[patch.name])
        elif patch.name in by_content:
            run_batch(state, pending)
            pending = []
            names = {v.path.name: str(v.path.relative_to(patch_set.root)) for v in patch.variants}
            result, selected[patch.name] = choose_by_content(
                state, patch, by_content[patch.name], names
            )
            results.append(result)
        elif variant is not None and batchable(
            patch, variant, state.judging, shared, batch=batch, trees=state.trees
        ):
            result = PatchResult(patch.name, oc.NOT_APPLICABLE)
            pending.append((patch, variant, result))
            results.append(result)
        else:
            run_batch(state, pending)
            pending = []
            results.append(classify_patch(state, patch, variant))
    run_batch(state, pending, last=True)
    return results
