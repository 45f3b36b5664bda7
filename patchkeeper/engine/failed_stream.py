"""A failed batch read patch by patch: every conflict of a stream diagnosed in one round.

`git apply` checks every file section of a stream, in order, each on the result of the
sections before it that applied (a failed section leaves its file as it was), and says, per
`Checking patch` line, how each went. So one failed run answers for many patches at once,
wherever the stream's chain of results is the one judging patch by patch would give:

- a patch every section of which applied is applied, unless a file of it is one a failed
  patch before it touched (that one is judged on the content before it: the patch waits);
- a patch whose sections failed is not in the chain (a section that applied is: its files are
  left to a later round), and is judged on the content it failed on, its words git's words
  about its own sections;
- a patch that moved, on files whose chain is clear, is guarded in the round (an offset
  stands only when the guard lets it: stream_moved.py, or alone), and the patches after it
  on its files wait;
- a patch on a file whose chain is in doubt, one that moved on such a file, one that is not
  a plain content change, or one creating a file an earlier patch touched waits for the next
  round.

The round then applies the applied ones in one run, reads every failed patch's files and
preimage blobs in one `cat-file --batch`, and judges each failed one (reverse check and
fuzz hint only where the files do not rule them out: could_apply.py; a 3-way attempt where
its preimages are at hand). A clean 3-way merge changes its files for the failed patches
after it on them (and theirs for those after them): they wait for the next round, the others
are judged in this one. The waiting ones go on, in series order, on the index as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from patchkeeper.engine.apply_output import (
    GIT_FATAL,
    block_offsets,
    failed_files,
    section_blocks,
)
from patchkeeper.engine.could_apply import fuzz_could_apply, plain_section, reverse_could_apply
from patchkeeper.engine.diffs import split_hunks
from patchkeeper.engine.judge import describe, has_it_outcome, judge_failed, merge_has_it_outcome
from patchkeeper.engine.merging import merge_alone, merge_together, preimages
from patchkeeper.engine.state import Item, TrialState
from patchkeeper.engine.stream_moved import apply_round
from patchkeeper.install.plumbing.scratch_index import ScratchIndex
from patchkeeper.model import outcomes as oc
from patchkeeper.patchset.model import PatchFile

if TYPE_CHECKING:  # made by the merge guard, only when it refuses a merge
    from patchkeeper.engine.doubts import Refusal

# A failed patch of the round: its place in the stream, and what git said of its sections.
Failed = tuple[int, list[list[str]]]


def _verdict(blocks: list[list[str]], paths: list[str]) -> tuple[str, set[str]] | None:
    """ "ok", "moved" or "failed", with the paths of the sections that applied; None when a
    section's words are not clear (an error naming no file of it)."""
    applied: set[str] = set()
    failed = False
    for block, path in zip(blocks, paths, strict=True):
        if any(line.startswith("error:") for line in block):
            said = failed_files("\n".join(block).encode(errors="surrogateescape"))
            if not said:
                return None
            failed = True
        else:
            applied.add(path)
    if failed:
        return "failed", applied
    return ("moved" if any(block_offsets(b) for b in blocks) else "ok"), applied


def _read(items: list[Item], stderr: bytes) -> list[list[list[str]]] | None:
    """git's words per section of each of ITEMS; None when they cannot be told apart."""
    blocks = section_blocks(stderr)
    counts = [len(split_hunks(variant.diff)) for _, variant, _ in items]
    if len(blocks) != sum(counts):
        return None
    said, at = [], 0
    for count in counts:
        said.append(blocks[at : at + count])
        at += count
    return said


def _sort(
    items: list[Item], said: list[list[list[str]]], doubt: set[str], touched: set[str]
) -> tuple[list[int], list[Failed], list[int], list[int]]:
    """ITEMS by what the stream (SAID: its words per item) answers for: those applied, those
    failed (with git's words), those that wait, those that moved on a clear chain. DOUBT and
    TOUCHED: files already in doubt, and touched, before the first (both grow here)."""
    applied: list[int] = []
    failed: list[Failed] = []
    waiting: list[int] = []
    moved: list[int] = []
    pending: set[str] = set()  # files of failed patches, judged on their content as it is
    for number, (_, variant, _) in enumerate(items):
        own = split_hunks(variant.diff)
        paths = [path for path, _, _ in own]
        files = set(paths)
        creates = {p for p, header, _ in own if b"\nnew file mode " in header}
        verdict = _verdict(said[number], paths)
        clear = not (files & doubt or creates & touched) and all(
            plain_section(header) for _, header, _ in own
        )
        if verdict is not None and verdict[0] == "moved" and clear and not files & pending:
            moved.append(number)  # the ones after it on its files wait for its guard
            doubt |= files
        elif (
            verdict is None
            or verdict[0] == "moved"
            or not clear
            or (verdict[0] == "ok" and files & pending)
        ):
            waiting.append(number)
            doubt |= files
        elif verdict[0] == "ok":
            applied.append(number)
        else:
            failed.append((number, said[number]))
            pending |= files
            doubt |= verdict[1]  # its sections that applied are in the stream's chain only
        touched |= files
    return applied, failed, waiting, moved


def judge_stream(state: TrialState, items: list[Item], stderr: bytes) -> list[Item] | None:
    """ITEMS failed as one stream (git said STDERR; the index is as before it): judge what
    the stream answers for (see the module docstring) and return the items left to judge, in
    order; None when git's words cannot be read per patch (the caller splits as before)."""
    said = _read(items, stderr)
    if said is None:
        return None
    stuck: set[str] = set()  # files whose chain in the stream is not one by one's
    touched: set[str] = set()
    first = True
    while True:
        applied, failed, waiting, moved = _sort(items, said, set(stuck), set(touched))
        if 0 in waiting:
            return None if first else items  # nothing gained over splitting, or a stream
        if (applied or moved) and not apply_round(state, items, applied, moved):
            return None if first else items
        later = _judge_failed(state, items, failed)
        left = sorted([*waiting, *later])
        # Every judged patch went as the stream took it (the failed ones out, the moved ones
        # in): the stream's words for the ones left still hold, read again without git.
        kept = all(items[n][2].outcome != oc.MERGED_3WAY for n, _ in failed) and all(
            items[n][2].outcome == oc.APPLIED_OFFSET for n in moved
        )
        if later or not left or not kept:
            return [items[n] for n in left]
        for n, blocks in failed:  # a section of it that applied is in the stream's chain only
            paths = [path for path, _, _ in split_hunks(items[n][1].diff)]
            stuck |= (_verdict(blocks, paths) or ("", set(paths)))[1]
        touched |= {p for n in range(len(items)) if n not in left for p in items[n][1].files}
        items, said, first = [items[n] for n in left], [said[n] for n in left], False


def _judge_failed(state: TrialState, items: list[Item], failed: list[Failed]) -> list[int]:
    """Judge each FAILED patch in order on the index as it is; returns the failed ones left
    for the next round (those on the files of a clean 3-way merge before them, and so on)."""
    if not failed:
        return []
    index = state.index
    pairs, paths = [], set()
    forwards = []
    for number, said in failed:
        variant = items[number][1]
        forward = "\n".join(line for block in said for line in block) + "\n"
        forwards.append(forward.encode(errors="surrogateescape"))
        pairs.append((variant.diff, failed_files(forwards[-1])))
        paths.update(path for path, _, _ in split_hunks(variant.diff))
    mergeable, contents = state.blobs.mergeable(pairs, read=sorted(paths))
    knowns = []
    for number, _ in failed:
        own = {path for path, _, _ in split_hunks(items[number][1].diff)}
        knowns.append(
            {**dict.fromkeys(own, b""), **{p: d for p, d in contents.items() if p in own}}
        )
    variants = [items[n][1] for n, _ in failed]
    fuzz = _fuzz_answers(index, [v.diff for v in variants], knowns)
    # Patches that share no file are judged together: their reverse checks in one run, their
    # 3-way merges in one run (a merge changes none of the others' files).
    disjoint = len(failed) > 1 and sum(map(len, knowns)) == len(set().union(*knowns))
    reverses: dict[int, bool] = {}
    merges: tuple[dict[int, bool], dict[int, Refusal]] = ({}, {})
    if disjoint:
        reverses, merges = _together(state, variants, knowns, mergeable, contents)
    # A 3-way attempt writes blobs: a preimage missing before may be there after it.
    attempted = (
        disjoint and sum(reverses.get(k) is False and m for k, m in enumerate(mergeable)) > 1
    )
    # A clean merge changes its files for the failed patches after it on them, and those
    # for the ones after them on theirs: they wait for the next round. The others' content
    # is as the stream saw it: they are judged in this one, in layers of patches that share
    # no file with an earlier one still to judge (a layer's 3-way merges in one run).
    changed: set[str] = set()
    left: list[int] = []
    todo = list(range(len(failed)))
    while todo:
        layer, later, blocked = [], [], set()
        for k in todo:
            own = set(knowns[k])
            if own & changed:
                left.append(failed[k][0])
                changed |= own
            elif own & blocked:
                later.append(k)
            else:
                layer.append(k)
            blocked |= own
        if not disjoint and len(layer) > 1:
            if attempted:  # an attempt before may have written a preimage missing then
                _ask_again(state, layer, pairs, mergeable)
            attempted |= _merge_layer(state, variants, layer, knowns, mergeable, contents,
                                      reverses, merges)  # fmt: skip
        for k in layer:
            patch, variant, result = items[failed[k][0]]
            known = knowns[k]  # a file the index lacks is empty
            held = {path: data for path, data in contents.items() if path in known}
            reverse = reverses.get(k)
            if reverse is None:
                reverse = _reverse_applies(index, variant, known)
            merged, refused = merges[0].get(k), merges[1].get(k)
            if merged is None:
                merged = False
                if not reverse and not mergeable[k] and attempted:
                    mergeable[k] = _may_merge_now(state, *pairs[k])
                if not reverse and mergeable[k]:
                    merged, refused = merge_alone(index, variant.diff, held)
                    attempted = True
            judge_failed(
                index, variant, result, has_it_outcome(state.judging, variant), forwards[k],
                reverse, merged, known, refused, state.blobs,
                merge_has_it_outcome(state, variant), fuzz.get(k),
            )  # fmt: skip
            describe(state, patch, variant, result)
            if merged and not disjoint:
                changed.update(known)
        todo = later
    return left


def _reverse_applies(index: ScratchIndex, variant: PatchFile, known: dict[str, bytes]) -> bool:
    """Whether VARIANT reverse-applies (git asked only where its files KNOWN allow it)."""
    return reverse_could_apply(variant.diff, known) and (
        index.apply(variant.diff, "--check", "--reverse").returncode == 0
    )


def _ask_again(
    state: TrialState, layer: list[int], pairs: list[tuple[bytes, list[str]]], mergeable: list[bool]
) -> None:
    """Whether the patches of LAYER (PAIRS: each one's diff and failed files) that lacked a
    preimage have it now that a 3-way attempt wrote blobs (in a format-patch series, the
    attempt of the patch before one on its files writes its preimage: that patch's
    "theirs"). Asked before the layer's one run, so that those found merge in it rather than
    in one run each after it; BlobCheck answers from the private object store without git
    where it can (loose_objects.py), so asking costs no process as a rule."""
    again = [k for k in layer if not mergeable[k] and state.blobs.missing(*pairs[k])]
    if again and len(again) + sum(mergeable[k] for k in layer) > 1:
        answers, _ = state.blobs.mergeable([pairs[k] for k in again])
        for k, can in zip(again, answers, strict=True):
            mergeable[k] = can


def _merge_layer(
    state: TrialState,
    variants: list[PatchFile],
    layer: list[int],
    knowns: list[dict[str, bytes]],
    mergeable: list[bool],
    contents: dict[str, bytes],
    reverses: dict[int, bool],
    merges: tuple[dict[int, bool], dict[int, Refusal]],
) -> bool:
    """For LAYER (failed VARIANTS that share no file with each other): each one's reverse
    check into REVERSES, and the 3-way merges of those that do not reverse-apply and have
    their preimages at hand (MERGEABLE) in one run into MERGES (CONTENTS: the files before
    it). Whether a merge was tried (git wrote its blobs)."""
    for k in layer:
        if k not in reverses:
            reverses[k] = _reverse_applies(state.index, variants[k], knowns[k])
    tried = [k for k in layer if not reverses[k] and mergeable[k]]
    if len(tried) < 2:
        return False
    merged, refused, _ = merge_together(state.index, [variants[k] for k in tried], contents)
    merges[0].update({tried[i]: answer for i, answer in merged.items()})
    merges[1].update({tried[i]: why for i, why in refused.items()})
    return True


def _together(
    state: TrialState,
    variants: list[PatchFile],
    knowns: list[dict[str, bytes]],
    mergeable: list[bool],
    contents: dict[str, bytes],
) -> tuple[dict[int, bool], tuple[dict[int, bool], dict[int, Refusal]]]:
    """For failed VARIANTS that share no file: whether each reverse-applies (those whose
    files, KNOWNS, do not rule it out, in one run) and whether each that does not merges in
    3-way (those MERGEABLE, in one run). What this leaves unsettled is asked alone."""
    reverses = {
        k: False for k, v in enumerate(variants) if not reverse_could_apply(v.diff, knowns[k])
    }
    maybe = [k for k in range(len(variants)) if k not in reverses]
    if len(maybe) > 1:
        found = reverse_checks(state.index, [variants[k] for k in maybe])
        reverses.update({maybe[i]: answer for i, answer in found.items()})
    tried = [k for k in range(len(variants)) if reverses.get(k) is False and mergeable[k]]
    if len(tried) < 2:
        return reverses, ({}, {})
    merged, refused, _ = merge_together(state.index, [variants[k] for k in tried], contents)
    return reverses, (
        {tried[i]: m for i, m in merged.items()},
        {tried[i]: why for i, why in refused.items()},
    )


def _may_merge_now(state: TrialState, diff: bytes, files: list[str]) -> bool:
    """Whether a 3-way attempt of DIFF (FILES: its failed files) is to be made now that an
    earlier attempt may have written the preimage blob it lacked (git writes each merged
    section's "theirs": in a format-patch series, the next patch's preimage). With no index
    line for a failed file, never; for one failed file, the attempt itself is the question
    (git finds no blob and writes nothing, so it fails as the forward apply did); else the
    blobs are asked again."""
    needed = preimages(diff)
    if any(needed.get(path) is None for path in files if path in needed):
        return False
    if len(files) == 1:
        return True
    [can], _ = state.blobs.mergeable([(diff, files)])
    return can


def _fuzz_answers(
    index: ScratchIndex, diffs: list[bytes], contents: list[dict[str, bytes]]
) -> dict[int, bool]:
    """Whether `git apply --check -C1` succeeds for each of DIFFS on the index, for those
    whose files (CONTENTS) do not rule it out: one run per set of them that share no file
    (git's answer for a section depends on its file alone). Where the words cannot be told
    apart per section, nothing: the conflict asks alone."""
    answers = {k: False for k, diff in enumerate(diffs) if not fuzz_could_apply(diff, contents[k])}
    layers: list[tuple[list[int], set[str]]] = []
    for k in range(len(diffs)):
        if k in answers:
            continue
        paths = set(contents[k])
        layer = next((layer for layer in layers if not layer[1] & paths), None)
        if layer is None:
            layers.append(([k], paths))
        else:
            layer[0].append(k)
            layer[1].update(paths)
    for members, _ in layers:
        if len(members) == 1:
            continue  # asking alone costs the same, in measure
        proc = index.apply(b"".join(diffs[k] for k in members), "--check", "-C1")
        blocks = section_blocks(proc.stderr)
        counts = [len(split_hunks(diffs[k])) for k in members]
        if proc.returncode == GIT_FATAL or len(blocks) != sum(counts):
            continue
        at = 0
        for k, count in zip(members, counts, strict=True):
            said, at = blocks[at : at + count], at + count
            answers[k] = not any(line.startswith("error:") for b in said for line in b)
    return answers


def reverse_checks(index: ScratchIndex, variants: list[PatchFile]) -> dict[int, bool]:
    """Whether each of VARIANTS (no two share a file) would reverse-apply, as far as two
    `git apply --check --reverse` runs tell: all of them, then those git did not name.
    Where that does not settle it, the index is left out (the caller asks alone)."""
    proc = index.apply(b"".join(v.diff for v in variants), "--check", "--reverse")
    if proc.returncode == 0:
        return dict.fromkeys(range(len(variants)), True)
    named = set(failed_files(proc.stderr))
    if proc.returncode == GIT_FATAL or not named:
        return {}
    failed = {i for i, v in enumerate(variants) if named.intersection(v.files)}
    rest = [i for i in range(len(variants)) if i not in failed]
    answers = dict.fromkeys(failed, False)
    if not rest:
        return answers
    if len(rest) == 1:
        return answers  # one left: asking it alone costs the same
    again = index.apply(b"".join(variants[i].diff for i in rest), "--check", "--reverse")
    if again.returncode == 0:
        answers.update(dict.fromkeys(rest, True))
    return answers
