"""A stream that applied with some of its patches at an offset, settled from the files.

An apply at an offset stands only when the offset guard lets it (offset_guard.py), so the
batch used to go back and apply the patches before the moved one as a batch, the moved one
alone, and the rest as a batch again: three applies and two reads per moved patch. When no
other patch of the stream touches a moved patch's files, the stream already holds what
judging one by one would: its files before the stream are what the moved patch met, and its
files after the stream are what it made. Those are read for every moved patch in one
`cat-file --batch` (by the blob ids of the two saved copies of the index), and where the
files alone say each apply stands (no reverse check to ask), the stream's results are the
answer. Anything else goes back to judging patch by patch.
"""

from __future__ import annotations

import collections

from patchkeeper.engine.apply_output import section_offsets
from patchkeeper.engine.diffs import split_hunks
from patchkeeper.engine.judge import try_alone
from patchkeeper.engine.state import Item, TrialState
from patchkeeper.install.plumbing.index_file import entry_ids
from patchkeeper.model import outcomes as oc
from patchkeeper.model.outcomes import HunkOffset


def alone_on_files(items: list[Item], moved: list[int]) -> bool:
    """Whether no other of ITEMS touches a file of the MOVED ones."""
    touched = collections.Counter(path for _, variant, _ in items for path in variant.files)
    return all(touched[path] == 1 for n in moved for path in items[n][1].files)


def settle_moved(
    state: TrialState,
    items: list[Item],
    offsets: list[list[HunkOffset]],
    before: tuple[bytes | None, str | None],
) -> bool:
    """ITEMS were applied as one stream (the index holds it, or at least the moved ones;
    BEFORE: the index before it), OFFSETS per item where git moved its hunks. True when
    every moved item stands by its files alone: every result is set. False: nothing is set,
    the index is as it is."""
    index = state.index
    moved = [n for n, found in enumerate(offsets) if found]
    if not alone_on_files(items, moved):
        return False  # another patch met or changed its files in the stream
    old_ids = entry_ids(before[0], index.id_bytes)
    new_ids = entry_ids(index.save()[0], index.id_bytes)
    if old_ids is None or new_ids is None:
        return False
    paths = [path for n in moved for path, _, _ in split_hunks(items[n][1].diff)]
    wanted = sorted({ids[path] for ids in (old_ids, new_ids) for path in paths if path in ids})
    blobs = index.read_blobs(wanted) if wanted else {}
    for n in moved:
        files = [path for path, _, _ in split_hunks(items[n][1].diff)]
        old = {p: blobs[old_ids[p]] for p in files if old_ids.get(p) in blobs}
        after = {p: blobs[new_ids[p]] for p in files if new_ids.get(p) in blobs}
        from patchkeeper.engine.offset_guard import stands_by_files  # loaded by a moved one

        if not stands_by_files(items[n][1].diff, offsets[n], old, after):
            return False
    for (patch, variant, result), found in zip(items, offsets, strict=True):
        result.outcome = oc.APPLIED_OFFSET if found else oc.APPLIED
        result.offsets = list(found)
        state.batched[patch.name] = variant.files
    return True


def apply_round(state: TrialState, items: list[Item], applied: list[int], moved: list[int]) -> bool:
    """Put a failed stream's round's APPLIED ones in, in one run, and judge the MOVED ones
    (failed_stream.py): in the same run when their files settle it (`settle_moved`), else each
    alone after the others. False when git answers otherwise than the stream did (the index
    is as before)."""
    index = state.index
    saved = index.save()
    touched = collections.Counter(path for n in [*applied, *moved] for path in items[n][1].files)
    together = all(touched[path] == 1 for n in moved for path in items[n][1].files)
    run = sorted([*applied, *moved]) if together else applied
    if run:
        proc = index.apply(b"".join(items[n][1].diff for n in run))
        sections = section_offsets(proc.stderr)
        counts = [len(split_hunks(items[n][1].diff)) for n in run]
        if proc.returncode != 0 or len(sections) != sum(counts):
            index.restore(saved)
            return False
        offsets, at = [], 0
        for count in counts:
            offsets.append([hunk for section in sections[at : at + count] for hunk in section])
            at += count
        if any(found for n, found in zip(run, offsets, strict=True) if n not in moved):
            index.restore(saved)
            return False
        if moved and together:
            if settle_moved(state, [items[n] for n in run], offsets, saved):
                return True
            index.restore(saved)
            if applied and index.apply(b"".join(items[n][1].diff for n in applied)).returncode:
                return False  # git said otherwise a moment ago: read it no further
    for n in applied:
        patch, variant, result = items[n]
        result.outcome = oc.APPLIED
        state.batched[patch.name] = variant.files
    for n in moved:
        try_alone(state, *items[n])
    return True
