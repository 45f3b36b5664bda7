"""One patch that cannot go in a batch: its record, its variant and its headers first.

Before git is asked, a patch may be settled by what is known of it: what patchkeeper wrote
earlier (intact: `already-applied`; damaged: `drifted`; its patch file changed: taken out
and tried afresh), no variant for the version (`expired`, undecided, `not-applicable`), a
patch file git must never see (`invalid`), an empty one, or a header or condition saying
upstream has it. Only then is it tried alone (judge.py), with its own trees for a writer.
"""

from __future__ import annotations

from patchkeeper.engine.judge import try_alone
from patchkeeper.engine.state import Judging, Recorded, TrialState
from patchkeeper.install.plumbing.scratch_index import ScratchIndex
from patchkeeper.model import nextstep
from patchkeeper.model import outcomes as oc
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.model import Patch, PatchFile

EMPTY_PATCH = "an empty patch (no diff): applied as empty, nothing to write"


def classify_patch(state: TrialState, patch: Patch, variant: PatchFile | None) -> PatchResult:
    """PATCH's result with VARIANT (None: no variant covers the version); the index then
    holds what it writes, and, with STATE.TREES, the result its trees."""
    index, judging = state.index, state.judging
    result = PatchResult(patch.name, oc.NOT_APPLICABLE)
    before = index.write_tree() if state.trees else None
    saved = index.save()
    record = _live_record(index, result, judging.recorded.get(patch.name))
    if result.outcome == oc.DRIFTED:
        return result
    if variant is None:
        _no_variant(result, patch, judging)
        if record is not None:
            result.notes.append("what patchkeeper wrote earlier stays in place")
        return result
    if record is not None and record.sha256 == variant.sha256:
        result.outcome = oc.ALREADY_APPLIED
        return result
    if record is not None:
        index.apply(record.diff, "--reverse")  # stale: take out what was written before
        result.notes.append("patch file changed since it was applied: re-applying")
    if variant.invalid is not None:  # unreadable or unsafe: never given to git
        result.outcome = oc.INVALID
        result.detail = variant.invalid
    elif variant.empty:  # quilt applies it as empty: nothing to write, nothing missing
        result.outcome = oc.ALREADY_APPLIED
        result.detail = EMPTY_PATCH
    elif (why := judging.upstream_has(variant)) is not None:
        result.outcome = oc.UPSTREAM_HAS_IT
        result.detail = why
    else:
        try_alone(state, patch, variant, result)
        state.batched.pop(patch.name, None)  # its diff comes from its trees, below
    if result.outcome in oc.FAILED and record is not None:
        index.restore(saved)  # keep the version written earlier rather than nothing
        result.notes.append("the version applied earlier stays in place")
    if state.trees:
        after = index.write_tree()
        if after != before:
            assert before is not None
            result.trees = (before, after)
    return result


def _upstream_has_any(patch: Patch, judging: Judging) -> str | None:
    """Why upstream has PATCH whatever its variants' ranges say, or None."""
    for variant in patch.variants:
        if (why := judging.upstream_has(variant)) is not None:
            return why
    return None


def _no_variant(result: PatchResult, patch: Patch, judging: Judging) -> None:
    """No variant covers the version. Nothing is taken out on that ground: an unknown version
    is undecided, and a fix that was in place is `expired` unless upstream has it."""
    if (why := _upstream_has_any(patch, judging)) is not None:
        result.outcome = oc.UPSTREAM_HAS_IT
        result.detail = why
    elif judging.version is None:
        result.undecided = True  # never green: a fix may be missing and nobody can tell
        result.detail = "the version is unknown and every variant has an Applies-To range"
    elif patch.name in judging.was_in_place:
        result.outcome = oc.EXPIRED
        retire = nextstep.command(
            "unapply", patch.name, install=judging.repo, patches=judging.patches
        )
        result.detail = (
            f"it was in place, but no variant's Applies-To contains {judging.version}: add a "
            f"variant for it (or widen Applies-To), or retire it with `{retire}`"
        )
    else:
        result.detail = f"no variant's Applies-To contains version {judging.version}"


def _live_record(
    index: ScratchIndex, result: PatchResult, record: Recorded | None
) -> Recorded | None:
    """The record of what patchkeeper wrote, if that is still in the tree.

    Wholly gone (a stash or a reset took it): None, and the patch is tried afresh. Partly
    changed: the outcome becomes `drifted` and nothing is tried.
    """
    if record is None:
        return None
    result.recorded = True
    if index.apply(record.diff, "--check", "--reverse").returncode == 0:
        return record
    if index.apply(record.diff, "--check").returncode == 0:
        result.recorded = False
        result.notes.append("patchkeeper wrote it earlier, but it is gone from the tree")
        return None
    result.outcome = oc.DRIFTED
    result.detail = "applied by patchkeeper, then changed by hand"
    return record
