"""Batches: patches that need no special handling, applied as ONE concatenated stream.

`git apply` applies a stream's patches in order, each on the result of the ones before, and
all or nothing. When the stream fails, it is first read patch by patch (failed_stream.py:
every conflict of the round diagnosed at once). Where git's words cannot be told apart per
patch, git names the files that failed; the batch is split there (or halved when it cannot
tell) and every patch that failed is judged as it would be alone: those alone in their group
from what git said about their files, with one reverse check and one 3-way merge for all of
them where the answers allow, the others tried alone. So the results are the one-by-one
results by construction (`tests/test_batch.py`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from patchkeeper.engine.apply_output import (
    GIT_FATAL,
    failed_files,
    section_offsets,
    stderr_blocks,
)
from patchkeeper.engine.diffs import split_hunks
from patchkeeper.engine.failed_stream import judge_stream, reverse_checks
from patchkeeper.engine.judge import (
    describe,
    has_it_outcome,
    judge_failed,
    merge_has_it_outcome,
    try_alone,
)
from patchkeeper.engine.merging import merge_together
from patchkeeper.engine.sharing import item_groups
from patchkeeper.engine.state import Item, Judging, TrialState
from patchkeeper.model import outcomes as oc
from patchkeeper.patchset.model import Patch, PatchFile

if TYPE_CHECKING:  # the guard is loaded by the first clean 3-way merge
    from patchkeeper.engine.merge_guard import Refusal

_SECTION_RE = re.compile(rb"^diff --git ", re.MULTILINE)


def batchable(
    patch: Patch,
    variant: PatchFile,
    judging: Judging,
    shared: set[str],
    *,
    batch: bool,
    trees: bool,
) -> bool:
    """Whether PATCH may go into a batch: it is simply tried (no record, not judged by
    its header or conditions), its diff can be concatenated, and, when a writer needs
    each patch's diff (TREES), no other patch touches its files (SHARED)."""
    if not batch or patch.name in judging.recorded or not variant.diff:
        return False
    if judging.upstream_has(variant) is not None:
        return False
    diff = variant.diff
    if not diff.endswith(b"\n") or not _SECTION_RE.search(diff):
        return False
    return not (trees and shared.intersection(variant.files))


def run_batch(state: TrialState, items: list[Item], *, last: bool = False) -> None:
    """Apply ITEMS in order, as few `git apply` runs as the answers allow. LAST: nothing is
    judged after them and no writer needs the index (no TREES), so a stream that applies is
    only checked (`--check`: git says the same, and writes no blob nobody will read)."""
    if not items:
        return
    if len(items) == 1:
        try_alone(state, *items[0])
        return
    index = state.index
    saved = index.save()
    only_check = last and not state.trees
    stream = b"".join(variant.diff for _, variant, _ in items)
    proc = index.apply(stream, "--check") if only_check else index.apply(stream)
    if proc.returncode == 0:
        sections = section_offsets(proc.stderr)
        counts = [len(_SECTION_RE.findall(variant.diff)) for _, variant, _ in items]
        if len(sections) == sum(counts):
            moved = _first_moved(sections, counts)
            if moved is None:
                for patch, variant, result in items:
                    result.outcome = oc.APPLIED
                    state.batched[patch.name] = variant.files
                return
            if _moved_stand(state, items, counts, sections, saved, only_checked=only_check):
                return
            # An apply at an offset is guarded alone (judge.py): the ones before it as a
            # batch, it alone, the rest as a batch.
            index.restore(saved)
            run_batch(state, items[:moved])
            try_alone(state, *items[moved])
            run_batch(state, items[moved + 1 :], last=last)
            return
        index.restore(saved)  # git read the stream otherwise: one by one
        for item in items:
            try_alone(state, *item)
        return
    if proc.returncode != GIT_FATAL:
        left = judge_stream(state, items, proc.stderr)
        if left is not None:
            run_batch(state, left, last=last)
            return
    failed = set(failed_files(proc.stderr))
    suspects = {i for i, (_, v, _) in enumerate(items) if failed.intersection(v.files)}
    if not suspects:  # git named nothing we know (a corrupt patch): halve
        half = len(items) // 2
        run_batch(state, items[:half])
        run_batch(state, items[half:])
        return
    # Patches linked by shared files form groups; groups share no file, so their order
    # changes none of them. The groups with no failed file go as one batch. A failed
    # patch alone in its group is judged from what git said about its files (the same
    # as about it alone), together with the others like it; a group of several is split
    # at its first failed patch, which is tried alone, in order.
    groups = item_groups(items)
    bad = [g for g in groups if suspects.intersection(g)]
    run_batch(state, [items[i] for g in groups if g not in bad for i in g])
    _judge_batch_failures(
        state, [items[g[0]] for g in bad if len(g) == 1], stderr_blocks(proc.stderr)
    )
    for group in (g for g in bad if len(g) > 1):
        first = next(n for n, i in enumerate(group) if i in suspects)
        run_batch(state, [items[i] for i in group[:first]])
        try_alone(state, *items[group[first]])
        run_batch(state, [items[i] for i in group[first + 1 :]])


def _moved_stand(
    state: TrialState,
    items: list[Item],
    counts: list[int],
    sections: list[list[oc.HunkOffset]],
    before: tuple[bytes | None, str | None],
    *,
    only_checked: bool,
) -> bool:
    """Whether the moved patches of a stream that applied (ITEMS, COUNTS: their file
    sections, SECTIONS: git's offsets per section) stand by their files (stream_moved.py),
    every result then set. BEFORE: the index before the stream. ONLY_CHECKED: the stream
    was only checked; the moved ones are applied now, for their files to be read (each
    alone on its files makes of them what it made in the stream)."""
    from patchkeeper.engine.stream_moved import alone_on_files, settle_moved  # moved only

    offsets, at = [], 0
    for count in counts:
        offsets.append([hunk for section in sections[at : at + count] for hunk in section])
        at += count
    moved = [n for n, found in enumerate(offsets) if found]
    if not alone_on_files(items, moved):
        return False
    if only_checked:
        proc = state.index.apply(b"".join(items[n][1].diff for n in moved))
        if proc.returncode != 0 or [h for s in section_offsets(proc.stderr) for h in s] != [
            hunk for n in moved for hunk in offsets[n]
        ]:
            state.index.restore(before)
            return False
    return settle_moved(state, items, offsets, before)


def _first_moved(sections: list[list[oc.HunkOffset]], counts: list[int]) -> int | None:
    """The first item (COUNTS: its file sections) with a hunk git applied at an offset."""
    at = 0
    for item, count in enumerate(counts):
        if any(sections[at : at + count]):
            return item
        at += count
    return None


def _judge_batch_failures(
    state: TrialState, items: list[Item], blocks: dict[str, list[str]]
) -> None:
    """ITEMS (no two share a file) failed in a batch; BLOCKS is what git said per file."""
    index = state.index
    known: list[tuple[Item, bytes]] = []
    for item in items:
        _, variant, _ = item
        sections = [path for path, _, _ in split_hunks(variant.diff)]
        if not sections or any(path not in blocks for path in sections):
            try_alone(state, *item)  # git's words cannot be told apart: alone, as one by one
            continue
        said = "\n".join(line for path in sections for line in blocks[path]) + "\n"
        known.append((item, said.encode()))
    if not known:
        return
    reverse: dict[int, bool] = {}
    if len(known) > 1:
        reverse = reverse_checks(index, [variant for (_, variant, _), _ in known])
    left = [i for i in range(len(known)) if reverse.get(i) is False]
    merged: dict[int, bool] = {}
    refused: dict[int, Refusal] = {}
    contents: dict[str, bytes] | None = None
    if len(left) > 1:
        pairs = [(known[i][0][1].diff, failed_files(known[i][1])) for i in left]
        paths = sorted({path for i in left for path in known[i][0][1].files})
        mergeable, contents = state.blobs.mergeable(pairs, read=paths)
        merged = {i: False for i, can in zip(left, mergeable, strict=True) if not can}
        tried = [i for i in left if i not in merged]
        if len(tried) > 1:
            variants = [known[i][0][1] for i in tried]
            found, refused_here, contents = merge_together(index, variants, contents)
            merged.update({tried[k]: m for k, m in found.items()})
            refused = {tried[k]: why for k, why in refused_here.items()}
    conflicting = [i for i in left if merged.get(i) is False]
    if len(conflicting) > 1 or contents is not None:
        paths = [
            path
            for i in conflicting
            for path in failed_files(known[i][1])
            if path in known[i][0][1].files and path not in (contents or {})
        ]
        contents = {**(contents or {}), **(index.read_files(paths) if paths else {})}
    for i, ((patch, variant, result), said) in enumerate(known):
        has_it = has_it_outcome(state.judging, variant)
        judge_failed(
            index, variant, result, has_it, said, reverse.get(i), merged.get(i),
            contents, refused.get(i), state.blobs, merge_has_it_outcome(state, variant),
        )  # fmt: skip
        describe(state, patch, variant, result)
