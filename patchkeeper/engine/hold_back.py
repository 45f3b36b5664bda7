"""Holding back: a patch that shares a file with an earlier failed one is not written either.

The combined result must never hold half of a chain, so after the patches are judged those
that depend on a failed one become `conflict`, and the scratch index is built again from the
start tree with only the patches that still go ahead.
"""

from __future__ import annotations

from patchkeeper.install.plumbing.git import GitError
from patchkeeper.install.plumbing.scratch_index import ScratchIndex
from patchkeeper.model import outcomes as oc
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.model import PatchFile, PatchSet

_ON_ITS_OWN = {
    oc.APPLIED: "applies",
    oc.APPLIED_OFFSET: "applies at an offset",
    oc.MERGED_3WAY: "merges in 3-way",
}


def hold_back_dependents(
    patch_set: PatchSet,
    selected: dict[str, PatchFile | None],
    results: list[PatchResult],
) -> bool:
    """A patch sharing a file with an earlier failed one is not written either (its outcome
    becomes `conflict`). Returns whether any was held back: the caller then rebuilds the
    scratch index without them.

    A failed patch leaves the index as it was, so a held-back patch was tried without it:
    where no earlier patch wrote its files, its outcome is how it fares on its own, and the
    detail says so (a person then knows that only the dependency keeps it out)."""
    failed_files: dict[str, str] = {}
    written_by: dict[str, set[str]] = {}  # file -> earlier patches that wrote it
    held: set[str] = set()
    for patch, result in zip(patch_set.patches, results, strict=True):
        files = set(selected[patch.name].files) if selected[patch.name] else set()
        if result.outcome in oc.FAILED:
            failed_files.update(dict.fromkeys(files, patch.name))
            continue
        shared = sorted(files & failed_files.keys())
        if shared and result.outcome in oc.WRITES:
            blocker = failed_files[shared[0]]
            before = set().union(*(written_by.get(path, set()) for path in files))
            how = _ON_ITS_OWN[result.outcome]
            if not before:
                alone = f"; {how} on its own"
            elif before & held:
                alone = ""  # tried on top of another held-back patch: nothing to say
            else:
                alone = f"; {how} without it, on the patches before it"
            result.outcome = oc.CONFLICT
            why = "is held back too" if blocker in held else "failed"
            result.detail = f"held back: shares {shared[0]} with {blocker}, which {why}{alone}"
            result.trees = None
            failed_files.update(dict.fromkeys(files, patch.name))
            held.add(patch.name)
        if result.outcome in oc.WRITES or patch.name in held:
            for path in files:
                written_by.setdefault(path, set()).add(patch.name)
    return bool(held)


def rebuild(
    index: ScratchIndex,
    start: str,
    results: list[PatchResult],
    batched: dict[str, tuple[str, ...]],
) -> None:
    """After a hold-back: the index again from START, with only the patches that still go
    ahead, so the combined result never holds half of a chain. Patches applied in a batch
    share no file with any other (BATCHED): their part comes back as one diff."""
    own = sorted({path for name, files in batched.items() for path in files})
    theirs = index.diff(start, index.write_tree(), own) if own else b""
    index.read_tree(start)
    for result in results:
        if result.trees is None:
            continue
        if index.apply(index.diff(*result.trees)).returncode != 0:
            raise GitError(f"internal: {result.name} no longer applies after a hold-back")
    if theirs and index.apply(theirs).returncode != 0:
        raise GitError("internal: the batched patches no longer apply after a hold-back")
