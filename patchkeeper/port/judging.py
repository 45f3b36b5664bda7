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
from patchkeeper.install.plumbing.scratch_index import scratch_index
from patchkeeper.install.system.durable import atomic_write
from patchkeeper.model import outcomes as oc
from patchkeeper.model.errors import UserError
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.model import Patch, PatchFile, PatchSet
from patchkeeper.patchset.series import patch_name
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
    """The variant a port judges for one patch; HOLDS: its range contains REF's release.
    CANDIDATES: several variants chosen by content (`Choose: by-content`) for that release:
    the engine tries them on REF plus the patches before, and the one it keeps is the port's
    (`settled`); until then VARIANT is the first of them."""

    patch: Patch
    variant: PatchFile
    holds: bool
    candidates: tuple[PatchFile, ...] = ()

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
    found = patch.candidates(version)
    if len(found) > 1:
        return Choice(patch, found[0], True, found)
    if found:
        return Choice(patch, found[0], True)
    point = release_point(version)
    spans = [(bounds(v.applies_to), v) for v in patch.variants]
    below = [(b.high, i) for i, (b, _) in enumerate(spans) if b.high < point]
    if below:
        return Choice(patch, spans[max(below)[1]][1], False)
    return Choice(patch, spans[min((b.low, i) for i, (b, _) in enumerate(spans))[1]][1], False)


def _forced(choice: Choice) -> Patch:
    """The patch with CHOICE's variant (or its candidates, chosen by content) as the ones
    the engine tries, whatever the version."""
    variants = choice.candidates or (choice.variant,)
    return Patch(choice.patch.name, choice.patch.entry, variants, choose=lambda _v: variants)


def settled(choice: Choice, result: PatchResult, root: Path) -> Choice:
    """CHOICE with the variant the engine kept by content on REF (RESULT names it: the one
    that applies, or at a conflict the one that came closest)."""
    if not choice.candidates:
        return choice
    variant = choice.patch.variant_at(result.variant, root) or choice.variant
    return Choice(choice.patch, variant, True)


def apply_on_tree(repo: Path, tree: str, diff: bytes) -> str:
    """TREE with DIFF applied (an exact diff made on it: it applies)."""
    with scratch_index(repo) as index:
        index.read_tree(tree)
        proc = index.apply(diff)
        if proc.returncode != 0:
            why = proc.stderr.decode(errors="replace").strip().splitlines()
            raise UserError(f"{repo}: a ported diff does not apply where it was made: {why[-1:]}")
        return index.write_tree()


def decide(
    choice: Choice,
    result: PatchResult,
    version: Version,
    root: Path,
    made_for: Version | None,
    crossed: str | None = None,
) -> Decision:
    """What a port does with a patch that fared RESULT on the release (MADE_FOR: as for
    fresh_variant; CROSSED: a release other than REF's that widening its range would take
    in, so a new variant is written instead and that release is judged as before)."""
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
        if crossed is not None:
            why = f"applies as it is; widening Applies-To {old_range} would take in {crossed} too"
            return fresh_variant(choice, result.outcome, why, version, root)
        wider = ranges.widen(old_range, version, choice.others())
        why = f"applies as it is; Applies-To {old_range} widened to {wider}"
        return Decision(name, WIDEN, relative, result.outcome, why, applies_to=wider, smoke=smoke)
    return fresh_variant(choice, result.outcome, _how(result), version, root, made_for)


def fresh_variant(
    choice: Choice,
    outcome: str,
    evidence: str,
    version: Version,
    root: Path,
    made_for: Version | None = None,
) -> Decision:
    """A refreshed variant for the release: a new one with the ranges split there, or the
    variant rewritten in place when its range starts at the release (nothing below to keep).
    MADE_FOR: the later release the variant was made on (its `Base`), when the port goes back
    to an older one: the new variant takes the range below MADE_FOR, the old one keeps the
    rest, so the releases it was made for are judged with it as before."""
    old_range = _range(choice.variant)
    name, relative, smoke = choice.patch.name, choice.relative(root), list(choice.variant.smoke)
    _refuse_taken_folder(choice, root)
    if choice.holds and made_for is not None and ranges.contains(old_range, made_for):
        below, kept = ranges.split(old_range, made_for, choice.others())
        return Decision(
            name, NEW_VARIANT, relative, outcome, f"{evidence}; {relative} was made on "
            f"{made_for.public} and keeps {kept}", applies_to=below, old_applies_to=kept,
            smoke=smoke,
        )  # fmt: skip
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


def _refuse_taken_folder(choice: Choice, root: Path) -> None:
    """A plain patch file that gets a second variant becomes a folder of its name: refused,
    before the set is built, when the set has something of that name already (`smoke/` for
    a `smoke.patch`)."""
    relative = choice.relative(root)
    holder = root / choice.patch.name
    if patch_name(relative) == choice.patch.name and (holder.exists() or holder.is_symlink()):
        raise UserError(
            f"{holder}: {relative} needs a folder of variants by that name, and the set has "
            "one already; rename the patch (and its series entry), then run patchkeeper port "
            "--abort and port again"
        )


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
        for judged, result in zip(rest, classification.results, strict=True):
            if result.outcome in (oc.CONFLICT, oc.INVALID, oc.NOT_APPLICABLE, oc.EXPIRED):
                return result
            choice = settled(judged, result, root)
            made_for = state.made_for.get(choice.patch.name)
            later = Version(made_for) if made_for else None
            crossed = state.not_widened.get(choice.patch.name)
            decision = decide(choice, result, version, root, later, crossed)
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
