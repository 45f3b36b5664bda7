"""Judge the patches a port has not decided yet against REF plus the ones ported before them,
and decide what each needs.

The engine judges them (`classify`, on a scratch index, against the tree `base_tree` names,
with REF's own content for `Upstream-Has:`), each with the variant chosen for REF's release,
or, when no variant's range holds it, the nearest one below (above, when none is below). The
tree grows by each patch's exact diff on REF as the port goes, so every patch is judged and
regenerated on top of the ones before it, as they will stand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from patchkeeper.engine.classify import classify
from patchkeeper.install.files import atomic_write
from patchkeeper.install.scratch import scratch_index
from patchkeeper.model import outcomes as oc
from patchkeeper.model.errors import UserError
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.model import Patch, PatchFile, PatchSet
from patchkeeper.patchset.variants import bounds, release_point
from patchkeeper.port import ranges
from patchkeeper.port.state import (
    KEEP,
    NEW_VARIANT,
    REFRESH,
    RETIRE,
    WIDEN,
    Decision,
    PortState,
    diff_file,
    save,
)


@dataclass(frozen=True)
class Choice:
    """The variant a port judges for one patch; HOLDS: its range contains REF's release."""

    patch: Patch
    variant: PatchFile
    holds: bool

    def relative(self, root: Path) -> str:
        return str(self.variant.path.relative_to(root))

    def others(self) -> list[str | None]:
        """The Applies-To texts of the patch's other variants."""
        return [_range(v) for v in self.patch.variants if v is not self.variant]


def _range(variant: PatchFile) -> str | None:
    return variant.fields.get("applies-to")


def choose(patch: Patch, version: Version) -> Choice:
    """The variant for VERSION, else the nearest: the one whose range ends highest below it,
    else the one that starts lowest above it."""
    if (unread := next((v for v in patch.variants if v.invalid is not None), None)) is not None:
        raise UserError(f"{unread.path}: {unread.invalid}; fix it first (patchkeeper lint)")
    chosen = patch.select(version)
    if chosen is not None:
        return Choice(patch, chosen, True)
    point = release_point(version)
    spans = [(bounds(v.applies_to), v) for v in patch.variants]
    below = [(b.high, i) for i, (b, _) in enumerate(spans) if b.high < point]
    if below:
        return Choice(patch, spans[max(below)[1]][1], False)
    return Choice(patch, spans[min((b.low, i) for i, (b, _) in enumerate(spans))[1]][1], False)


def _forced(choice: Choice) -> Patch:
    """The patch with CHOICE as its one variant, chosen whatever the version."""
    variant = choice.variant
    return Patch(choice.patch.name, choice.patch.entry, (variant,), choose=lambda _v: variant)


def apply_on_tree(repo: Path, tree: str, diff: bytes) -> str:
    """TREE with DIFF applied (an exact diff made on it: it applies)."""
    with scratch_index(repo) as index:
        index.read_tree(tree)
        proc = index.apply(diff)
        if proc.returncode != 0:
            why = proc.stderr.decode(errors="replace").strip().splitlines()
            raise UserError(f"{repo}: a ported diff does not apply where it was made: {why[-1:]}")
        return index.write_tree()


def decide(choice: Choice, result: PatchResult, version: Version, root: Path) -> Decision:
    """What a port does with a patch that fared RESULT on the release."""
    variant, name = choice.variant, choice.patch.name
    relative = choice.relative(root)
    old_range = _range(variant)
    smoke = list(variant.smoke)
    if variant.empty:
        return Decision(name, KEEP, relative, result.outcome, "an empty patch: nothing to port")
    if result.outcome in (oc.UPSTREAM_HAS_IT, oc.ALREADY_APPLIED):
        evidence = result.detail or "its changes are all in REF already"
        return Decision(name, RETIRE, relative, result.outcome, evidence)
    if result.outcome == oc.APPLIED:
        if choice.holds:
            return Decision(name, KEEP, relative, result.outcome, "applies as it is", smoke=smoke)
        wider = ranges.widen(old_range, version, choice.others())
        why = f"applies as it is; Applies-To {old_range} widened to {wider}"
        return Decision(name, WIDEN, relative, result.outcome, why, applies_to=wider, smoke=smoke)
    return fresh_variant(choice, result.outcome, _how(result), version, root)


def fresh_variant(
    choice: Choice, outcome: str, evidence: str, version: Version, root: Path
) -> Decision:
    """A refreshed variant for the release: a new one with the ranges split there, or the
    variant rewritten in place when its range starts at the release (nothing below to keep)."""
    old_range = _range(choice.variant)
    name, relative, smoke = choice.patch.name, choice.relative(root), list(choice.variant.smoke)
    if choice.holds and ranges.below_is_empty(old_range, version):
        return Decision(
            name, REFRESH, relative, outcome, evidence, applies_to=old_range,
            old_applies_to=old_range, smoke=smoke,
        )  # fmt: skip
    old_text, new_text = ranges.split(old_range, version, choice.others())
    return Decision(
        name, NEW_VARIANT, relative, outcome, evidence, applies_to=new_text,
        old_applies_to=old_text if old_text != (old_range or "") else old_range, smoke=smoke,
    )  # fmt: skip


def _how(result: PatchResult) -> str:
    if result.outcome == oc.MERGED_3WAY:
        files = ", ".join(result.merged_files) or "its files"
        return f"merged 3-way cleanly ({files}); regenerated on the release"
    moves = ", ".join(f"{o.file} hunk #{o.hunk} {o.offset:+d}" for o in result.offsets)
    return f"applies at an offset ({moves or 'moved'}); regenerated on the release"


def judge_rest(
    repo: Path,
    state_dir: Path,
    choices: list[Choice],
    state: PortState,
    version: Version,
    root: Path,
    checkpoint: Callable[[str], None],
) -> PatchResult | None:
    """Decide every patch from STATE.position on, saving the state after each; stop at the
    first conflict and return its result (None: every patch is decided)."""
    rest = choices[state.position :]
    if not rest:
        return None
    subset = PatchSet(root, tuple(_forced(c) for c in rest))
    classification = classify(
        subset, repo, version, upstream_ref=state.commit, target_ref=state.base_tree
    )
    try:
        for choice, result in zip(rest, classification.results, strict=True):
            if result.outcome in (oc.CONFLICT, oc.INVALID, oc.NOT_APPLICABLE, oc.EXPIRED):
                return result
            decision = decide(choice, result, version, root)
            if result.outcome in oc.WRITES:
                diff = classification.patch_diff(result) or b""
                if decision.action in (NEW_VARIANT, REFRESH):
                    atomic_write(diff_file(state_dir, choice.patch.name), diff)
                if diff:
                    state.base_tree = apply_on_tree(repo, state.base_tree, diff)
            state.decisions.append(decision)
            state.position += 1
            save(state_dir, state)
            checkpoint(f"port.{choice.patch.name}")
    finally:
        classification.close()
    return None
