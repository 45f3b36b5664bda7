"""Judging one patch on the scratch index: forward, then reverse, then 3-way, never fuzz.

A patch applies (at an offset or not), is there already (its reverse applies: upstream has
it, or the work tree has it unrecorded), merges in 3-way (when the merge guard lets it), or
conflicts with its failing hunks named. The batch step calls `judge_failed` with what it
found out for several patches at once; the result is the one asking alone would give.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from patchkeeper.engine.apply_output import GIT_FATAL, failed_files, output_lines, parse_offsets
from patchkeeper.engine.conflicts import conflicting_hunks
from patchkeeper.engine.could_apply import reverse_could_apply
from patchkeeper.engine.diffs import split_hunks
from patchkeeper.engine.merging import BlobCheck, merge_alone
from patchkeeper.engine.state import Judging, TrialState
from patchkeeper.install.plumbing.scratch_index import ScratchIndex
from patchkeeper.model import outcomes as oc
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.model import Patch, PatchFile

if TYPE_CHECKING:  # the guard is loaded by the first clean 3-way merge
    from patchkeeper.engine.merge_guard import Refusal

_CORRUPT_RE = re.compile(r"corrupt patch|unrecognized input|patch fragment without header")

HasIt = str | Callable[[], str]


def classify_one(
    index: ScratchIndex,
    patch_file: PatchFile,
    result: PatchResult,
    has_it_outcome: HasIt,
    blobs: BlobCheck | None = None,
    merge_has_it: HasIt | None = None,
) -> None:
    """Try one patch on the scratch index; leave the index holding its result if it applies.

    HAS_IT_OUTCOME is the outcome when the patch's changes are already there (or a function
    that decides it, asked only then: it may cost git calls). BLOBS, MERGE_HAS_IT: see
    `judge_failed`."""
    before = index.save()
    check = index.apply(patch_file.diff)  # atomic: applied in full, or the index is unchanged
    if check.returncode == 0:
        result.offsets = parse_offsets(check.stderr)
        result.outcome = oc.APPLIED_OFFSET if result.offsets else oc.APPLIED
        if result.offsets:
            _guard_offset(index, before, patch_file, result, has_it_outcome, merge_has_it)
        return
    said = output_lines(check.stderr)
    if check.returncode == GIT_FATAL or any(_CORRUPT_RE.search(line) for line in said):
        result.outcome = oc.INVALID
        result.detail = f"git cannot read the diff: {said[-1]}"
        return
    judge_failed(
        index, patch_file, result, has_it_outcome, check.stderr, blobs=blobs,
        merge_has_it=merge_has_it,
    )  # fmt: skip


def _guard_offset(
    index: ScratchIndex,
    before: tuple[bytes | None, str | None],
    patch_file: PatchFile,
    result: PatchResult,
    has_it_outcome: HasIt,
    merge_has_it: HasIt | None,
) -> None:
    """A forward apply at an offset stands only when it writes nothing the target has
    (`offset_guard`); else the index goes back to BEFORE and RESULT says why."""
    from patchkeeper.engine.offset_guard import judge_offset  # only a moved apply needs it

    doubt = judge_offset(index, before, patch_file.diff, result.offsets)
    if doubt is None:
        return
    result.offsets = []
    ask = has_it_outcome if doubt.reverse else (merge_has_it or has_it_outcome)
    outcome = (ask if isinstance(ask, str) else ask()) if doubt.has_it else oc.CONFLICT
    if doubt.reverse or outcome == oc.UPSTREAM_HAS_IT:
        result.outcome, result.detail = outcome, doubt.detail
        return
    result.outcome = oc.CONFLICT
    result.detail = doubt.detail
    if doubt.has_it:  # every block doubled, but the work tree's content is not upstream's
        result.detail = f"{doubt.detail}, but HEAD's commit does not show it"


def judge_failed(
    index: ScratchIndex,
    patch_file: PatchFile,
    result: PatchResult,
    has_it_outcome: HasIt,
    forward: bytes,
    reverse_applies: bool | None = None,
    merged: bool | None = None,
    contents: dict[str, bytes] | None = None,
    refused: Refusal | None = None,
    blobs: BlobCheck | None = None,
    merge_has_it: HasIt | None = None,
    fuzz: bool | None = None,
) -> None:
    """A patch whose forward apply failed (git said FORWARD, not a fatal error): already
    there (reverse applies), merged in 3-way, or a conflict with its failing hunks.

    What a caller found out for several patches at once it passes in: REVERSE_APPLIES,
    MERGED (the 3-way merge is in the index already when True), CONTENTS (the index's
    content of the failed files), REFUSED (why a clean 3-way merge was dropped). BLOBS
    skips a 3-way attempt that cannot merge (no preimage blob). MERGE_HAS_IT: the outcome
    when a clean merge would write the change a second time (default: HAS_IT_OUTCOME). FUZZ:
    whether quilt's fuzz would apply it, when the caller asked already (upstream_took.py)."""
    diff = patch_file.diff
    files = failed_files(forward)
    can_merge = True
    asked: list[str] = []  # the files read here: one the index does not hold is empty
    if reverse_applies is None or merged is None:
        # The files first (with whether a 3-way merge has its preimages, in the same
        # process): a reverse check they show cannot succeed is not asked (could_apply.py).
        paths = [path for path, _, _ in split_hunks(diff)]
        asked = unread = [path for path in paths if path not in (contents or {})]
        if merged is None and blobs is not None:
            [can_merge], read = blobs.mergeable([(diff, files)], read=unread)
            contents = {**(contents or {}), **read}
        elif unread:
            contents = {**(contents or {}), **index.read_files(unread)}
    if reverse_applies is None:
        reverse_applies = (
            reverse_could_apply(diff, contents or {})
            and index.apply(diff, "--check", "--reverse").returncode == 0
        )
    if reverse_applies:
        result.outcome = has_it_outcome if isinstance(has_it_outcome, str) else has_it_outcome()
        return
    if merged is None:
        merged = False
        if can_merge:
            merged, refused = merge_alone(index, diff, contents or {})
    if merged:
        result.outcome = oc.MERGED_3WAY
        result.merged_files = files
        return
    if refused is not None and refused.has_it:
        ask = merge_has_it or has_it_outcome
        outcome = ask if isinstance(ask, str) else ask()
        if outcome == oc.UPSTREAM_HAS_IT:  # else the work tree has it, but not from upstream
            result.outcome, result.detail = outcome, refused.detail
            return
        detail = f"{refused.detail}, but HEAD's commit does not show it"
        refused = replace(refused, has_it=False, detail=detail)
    result.outcome = oc.CONFLICT
    result.conflicts = conflicting_hunks(index, diff, files, forward, contents)
    names = ", ".join(files) or "the target"
    result.detail = refused.detail if refused else f"does not apply to {names}"
    from patchkeeper.engine.upstream_took import measure  # only a conflict is measured

    known = {**dict.fromkeys(asked, b""), **(contents or {})}
    result.upstream_took = measure(index, diff, known, fuzz)
    if result.upstream_took is not None and (qualifier := result.upstream_took.qualifier()):
        result.detail = f"{result.detail}; {qualifier}"


def has_it_outcome(judging: Judging, variant: PatchFile) -> Callable[[], str]:
    """The outcome when VARIANT's reverse applies: upstream has it, unless the work tree's
    content is not upstream's (then it is there, but not recorded)."""
    from_upstream = judging.from_upstream

    def has_it() -> str:
        if from_upstream is not None and not from_upstream(variant):
            return oc.ALREADY_APPLIED
        return oc.UPSTREAM_HAS_IT

    return has_it


def merge_has_it_outcome(state: TrialState, variant: PatchFile) -> Callable[[], str]:
    """The outcome when a clean 3-way merge of VARIANT would write its change a second
    time. On the work tree the content must be upstream's: the files as the upstream
    commit holds them (a reverse check of that commit fails, as it did here)."""
    judging, index = state.judging, state.index
    upstream = judging.upstream_ref

    def has_it() -> str:
        if judging.from_upstream is None:
            return oc.UPSTREAM_HAS_IT
        if upstream is not None and index.same_as(upstream, variant.files):
            return oc.UPSTREAM_HAS_IT
        return oc.ALREADY_APPLIED

    return has_it


def try_alone(state: TrialState, patch: Patch, variant: PatchFile, result: PatchResult) -> None:
    """Try VARIANT alone on the index (forward, reverse, 3-way), as one by one does."""
    has_it = has_it_outcome(state.judging, variant)
    merge_has_it = merge_has_it_outcome(state, variant)
    classify_one(state.index, variant, result, has_it, state.blobs, merge_has_it)
    describe(state, patch, variant, result)


def describe(state: TrialState, patch: Patch, variant: PatchFile, result: PatchResult) -> None:
    """RESULT's detail for the outcomes that need one; a patch it writes is noted in
    STATE.BATCHED (its diff is its part of the combined diff)."""
    if result.outcome == oc.UPSTREAM_HAS_IT and not result.detail:
        result.detail = "its changes are already upstream: the patch can be retired"
    elif result.outcome == oc.ALREADY_APPLIED:
        result.detail = "present in the work tree but not recorded by patchkeeper"
    if result.outcome in oc.WRITES:  # its diff is its part of the combined diff
        state.batched[patch.name] = variant.files
