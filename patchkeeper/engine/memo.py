"""Reuse across refs (`check`): a group of patches seen with the same blobs is not tried again.

Patches that share files form a group (sharing.py) whose outcomes depend only on the group's
patch files and the target's blobs of the group's files; `recall` answers such a group from
an earlier ref and leaves out of the scratch index the files only answered groups need.
"""

from __future__ import annotations

from dataclasses import replace

from patchkeeper.engine.sharing import linked_groups
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.model import Patch, PatchFile


def _copy(result: PatchResult) -> PatchResult:
    return replace(
        result,
        offsets=list(result.offsets),
        merged_files=list(result.merged_files),
        conflicts=list(result.conflicts),
        notes=list(result.notes),
        trees=None,
    )


class TrialMemo:
    """What trying patches gave, for `check` across many refs.

    Patches that share files (directly or through others) form a group. Trying a group's
    patches depends only on their files (the patch files' bytes) and on the target's blobs
    (mode and id) of the group's paths: when an earlier ref had the same blobs, its results
    are the answer, without a git call. Only the results of trying are kept; what depends
    on the ref's version (variant, Applies-To, Upstream-Fixed-In, Upstream-Has) is judged
    for each ref anew, and decides which patches are tried at all.
    """

    def __init__(self) -> None:
        self._results: dict[tuple, dict[str, PatchResult]] = {}
        self.hits = 0  # groups answered from an earlier ref
        self.tries = 0  # groups tried

    def get(self, key: tuple) -> dict[str, PatchResult] | None:
        found = self._results.get(key)
        if found is not None:
            self.hits += 1
            return {name: _copy(result) for name, result in found.items()}
        self.tries += 1
        return None

    def put(self, key: tuple, results: dict[str, PatchResult]) -> None:
        self._results[key] = {name: _copy(result) for name, result in results.items()}


def _entries(listing: bytes) -> dict[str, bytes]:
    """`ls-tree -z` output -> path: its whole entry (mode, type, id, path, NUL)."""
    entries: dict[str, bytes] = {}
    for entry in listing.split(b"\0"):
        if entry:
            entries[entry.split(b"\t", 1)[1].decode(errors="surrogateescape")] = entry + b"\0"
    return entries


# A group's key (its patches and patch files, the ref's entries of its files, the files) and
# its patches' names: a group tried on this ref, to remember once its results are in.
Pending = tuple[tuple, list[str]]


def recall(
    memo: TrialMemo, tried: list[tuple[Patch, PatchFile]], listing: bytes
) -> tuple[dict[str, PatchResult], list[Pending], bytes]:
    """What MEMO knows of TRIED's groups on a ref whose `ls-tree -r -z` entries of the
    touched paths are LISTING: the results reused from an earlier ref, the groups to
    remember once tried, and the entries those groups need (all the index must hold)."""
    entries = _entries(listing)
    known: dict[str, PatchResult] = {}
    to_remember: list[Pending] = []
    wanted: set[str] = set()
    for group in linked_groups(tried):
        files = sorted({path for _, v in group for path in v.files})
        key = (
            tuple((patch.name, variant.source) for patch, variant in group),
            tuple(entries.get(path, b"") for path in files),
            tuple(files),
        )
        found = memo.get(key)
        if found is None:
            to_remember.append((key, [patch.name for patch, _ in group]))
            wanted.update(files)
        else:
            known.update(found)
    return known, to_remember, b"".join(e for path, e in entries.items() if path in wanted)


def remember(memo: TrialMemo, to_remember: list[Pending], results: list[PatchResult]) -> None:
    """Put into MEMO the results of the groups TO_REMEMBER, from this ref's RESULTS."""
    by_name = {result.name: result for result in results}
    for key, names in to_remember:
        memo.put(key, {name: by_name[name] for name in names})
