"""A fix whose variants are chosen by content: try each candidate, keep the one that applies.

When the version cannot tell two code shapes apart (a main-channel install past a release may
hold either), a set marks the variants `Choose: by-content` and lets their ranges overlap. Each
candidate is then tried on the scratch index as it stands (the patches before it applied), and
put back; the choice is:

- the variant patchkeeper wrote earlier, when its record names one of them (its own record
  then says whether it is intact, drifted or gone);
- else the one that applies: forward, or already there (reverse applies, or upstream has it
  by its header or conditions). Candidates that all find the fix there already agree: nothing
  to write, the first is kept. One that applies only by a 3-way merge is kept only when no
  other applies at all;
- none applies: a `conflict` naming each variant's failure (the closest one's hunks shown);
- more than one would write: a `conflict` too, "ambiguous", nothing written: a guess could
  write the wrong shape's code.

The choice is said in the result (`variant_choice`, and a note), never taken silently. The
chosen variant is then judged again on the real state, so what a writer records is its own.
"""

from __future__ import annotations

from dataclasses import replace

from patchkeeper.engine.one_patch import classify_patch
from patchkeeper.engine.state import TrialState
from patchkeeper.model import outcomes as oc
from patchkeeper.model.content_choice import ContentChoice, VariantTrial
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.model import Patch, PatchFile

_THERE = (oc.ALREADY_APPLIED, oc.UPSTREAM_HAS_IT)  # applies: nothing to write
_CLEAN = (oc.APPLIED, oc.APPLIED_OFFSET, *_THERE)


def choose_by_content(
    state: TrialState, patch: Patch, candidates: tuple[PatchFile, ...], name_of: dict[str, str]
) -> tuple[PatchResult, PatchFile | None]:
    """PATCH's result, its variant chosen among CANDIDATES by what applies on STATE's index,
    and the variant chosen (None: none or several apply). NAME_OF: each candidate's path in
    the set, by its file name."""
    known = state.judging.version is not None
    record = state.judging.recorded.get(patch.name)
    written = [v for v in candidates if record is not None and v.sha256 == record.sha256]
    if written:
        chosen = written[0]
        result = classify_patch(state, patch, chosen)
        why = f"variant {chosen.path.name} chosen: patchkeeper wrote it earlier"
        _say(result, ContentChoice(name_of[chosen.path.name], why, known, ()))
        return result, chosen
    trials = [(variant, _trial(state, patch, variant)) for variant in candidates]
    tried = tuple(
        VariantTrial(name_of[v.path.name], r.outcome, r.detail or _failure(r)) for v, r in trials
    )
    if any(r.outcome == oc.DRIFTED for _, r in trials):
        result = classify_patch(state, patch, candidates[0])  # drifted whatever the variant
        return result, None
    clean = [(v, r) for v, r in trials if r.outcome in _CLEAN]
    merged = [(v, r) for v, r in trials if r.outcome == oc.MERGED_3WAY]
    unknown = "" if known else "the version is unknown, so every variant was tried; "
    agree = len(clean) > 1 and all(r.outcome in _THERE for _, r in clean)
    if agree:
        clean = clean[:1]  # they agree: the fix is there, nothing to write
    if len(clean) == 1 or (not clean and len(merged) == 1):
        chosen, _ = clean[0] if clean else merged[0]
        others = [_one_failure(v, r) for v, r in trials if v is not chosen]
        how_word = "applies" if clean else "applies only by a 3-way merge"
        because = "; ".join(others) if others else f"it {how_word}"
        if agree:
            because = f"every variant that applies finds the fix there ({clean[0][1].outcome})"
        why = f"variant {chosen.path.name} chosen by content: {unknown}{because}"
        result = classify_patch(state, patch, chosen)
        _say(result, ContentChoice(name_of[chosen.path.name], why, known, tried))
        return result, chosen
    result = PatchResult(patch.name, oc.CONFLICT)
    if clean or merged:
        both = ", ".join(v.path.name for v, _ in (clean or merged))
        result.detail = (
            f"ambiguous: variants {both} all apply, so the content cannot choose: {unknown}"
            "nothing written; make their context tell the shapes apart, or their Applies-To"
        )
    else:
        closest_variant, closest = min(trials, key=lambda item: len(item[1].conflicts))
        result.conflicts = closest.conflicts
        failures = "; ".join(_one_failure(v, r) for v, r in trials)
        result.detail = f"no variant applies: {unknown}{failures}"
        if len(trials) > 1:
            result.notes.append(f"the failing hunks shown are {closest_variant.path.name}'s")
    _say(result, ContentChoice(None, result.detail, known, tried))
    return result, None


def _trial(state: TrialState, patch: Patch, variant: PatchFile) -> PatchResult:
    """How VARIANT fares on the index as it is now; the index and state are put back."""
    saved = state.index.save()
    trial = replace(state, trees=False, batched={})
    try:
        return classify_patch(trial, patch, variant)
    finally:
        state.index.restore(saved)


def _failure(result: PatchResult) -> str:
    files = sorted({c.file for c in result.conflicts})
    return f"does not apply to {', '.join(files)}" if files else result.outcome


def _one_failure(variant: PatchFile, result: PatchResult) -> str:
    if result.outcome in _CLEAN or result.outcome == oc.MERGED_3WAY:
        return f"{variant.path.name} {result.outcome}"
    return f"{variant.path.name} {result.detail or _failure(result)}"


def _say(result: PatchResult, choice: ContentChoice) -> None:
    result.variant_choice = choice
    if choice.chosen is not None:
        result.notes.insert(0, choice.reason)
