"""Before an apply at an offset is accepted: does it write a change the target already has?

`git apply` looks for a hunk's lines at the line its header names, then further and further
away. When upstream took a fix at the patch's own place and the hunk's context stands again
a few lines on (a repeated stanza, a second parser), the forward apply succeeds there, at an
offset, and writes the fix a second time (measured on jq 1.8.2: +9 lines, the 8-line length
check declared twice, the build broken). So a forward apply that moved is asked two more
questions before it stands:

- Does the reverse apply at the patch's own place (no hunk moved)? Then the target has the
  change exactly where the patch puts it: it is there already, nothing is written.
- Does every block a moved hunk adds stand already between the patch's own place and the
  place git found (a context line upstream reworded keeps the reverse from applying)? Then
  upstream has it, as with a 3-way merge that would write each block twice at its place.
- Else would the apply write an added block a second time (`merge_guard.judge_merge`, the
  test a 3-way merge passes)? Every block doubled at its place is upstream having it; some
  doubled, or doubled only elsewhere in the file, is unclear: a conflict, nothing written.
- A reverse that applies only at an offset too: the change stands somewhere else in the file,
  so which copy is the patch's is unclear: a conflict, nothing written.

Only a patch whose forward apply moved pays for this (two reads, and a reverse check when
the files do not rule it out).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from patchkeeper.engine.apply_output import parse_offsets
from patchkeeper.engine.could_apply import reverse_could_apply
from patchkeeper.engine.diffs import split_hunks
from patchkeeper.engine.merge_guard import EVIDENCE, added_blocks, is_telling, judge_merge
from patchkeeper.install.plumbing.index_file import entry_ids
from patchkeeper.install.plumbing.scratch_index import ScratchIndex
from patchkeeper.model.outcomes import HunkOffset
from patchkeeper.patchset.diffpaths import unquote

_HEADER = re.compile(rb"^@@ -(\d+)(?:,(\d+))?")

Saved = tuple[bytes | None, str | None]


@dataclass(frozen=True)
class OffsetDoubt:
    """Why an apply at an offset does not stand. REVERSE: the patch's reverse applies at its
    own place; HAS_IT: every added block is there already, at its place; else unclear."""

    reverse: bool
    has_it: bool
    detail: str


def judge_offset(
    index: ScratchIndex, before: Saved, diff: bytes, offsets: list[HunkOffset]
) -> OffsetDoubt | None:
    """None when DIFF, just applied to INDEX at OFFSETS, may stand (the index keeps it);
    else why not, with INDEX back at BEFORE (its state before the apply)."""
    applied = index.save()
    sections = [(path, hunks) for path, _, hunks in split_hunks(diff)]
    paths = [path for path, _ in sections]
    both = _before_and_after(index, paths, before, applied)
    if both is None:  # the ids are not known: the index is asked before and after
        after = index.read_files(paths)
        index.restore(before)
        old = index.read_files(paths)
    else:
        old, after = both
        index.restore(before)
    # A reverse check the files show cannot succeed is not asked (could_apply.py).
    reverse = (
        index.apply(diff, "--check", "--reverse") if _could_reverse(diff, paths, old) else None
    )
    if reverse is not None and reverse.returncode == 0 and not parse_offsets(reverse.stderr):
        return OffsetDoubt(
            True,
            True,
            "its reverse applies at the patch's own place (the forward apply would only "
            "fit further on, writing it a second time)",
        )
    there = _between(sections, old, offsets)
    if there:
        return OffsetDoubt(
            False,
            True,
            f"its {there} added line(s) stand already between the patch's own place and the "
            "offset where it would fit: upstream has them",
        )
    refusal = judge_merge(sections, old, after, "an apply at an offset")
    if refusal is not None:
        return OffsetDoubt(False, refusal.has_it, refusal.detail)
    if reverse is not None and reverse.returncode == 0:
        return OffsetDoubt(
            False,
            False,
            "it applies only at an offset and its reverse applies too, elsewhere: the file "
            "may hold the change already, so nothing is written",
        )
    index.restore(applied)
    return None


def stands_by_files(
    diff: bytes, offsets: list[HunkOffset], old: dict[str, bytes], after: dict[str, bytes]
) -> bool:
    """Whether DIFF, applied at OFFSETS to files holding OLD (AFTER: what it made of them),
    stands as `judge_offset` says it does when no reverse check is asked: the files rule
    the reverse out, no moved block stands already between, the apply writes nothing twice.
    False: `judge_offset` decides (git is asked, or it does not stand)."""
    sections = [(path, hunks) for path, _, hunks in split_hunks(diff)]
    if _could_reverse(diff, [path for path, _ in sections], old):
        return False
    if _between(sections, old, offsets):
        return False
    return judge_merge(sections, old, after, "an apply at an offset") is None


def _before_and_after(
    index: ScratchIndex, paths: list[str], before: Saved, after: Saved
) -> tuple[dict[str, bytes], dict[str, bytes]] | None:
    """PATHS' content in the index as saved BEFORE and AFTER (those it held), from the ids in
    the two copies of its file, in one process; None when the ids are not known."""
    old_ids, new_ids = (entry_ids(saved[0], index.id_bytes) for saved in (before, after))
    if old_ids is None or new_ids is None:
        return None
    wanted = sorted({ids[path] for ids in (old_ids, new_ids) for path in paths if path in ids})
    blobs = index.read_blobs(wanted) if wanted else {}

    def held(entries: dict[str, str]) -> dict[str, bytes]:
        return {p: blobs[entries[p]] for p in paths if p in entries and entries[p] in blobs}

    return held(old_ids), held(new_ids)


def _could_reverse(diff: bytes, paths: list[str], old: dict[str, bytes]) -> bool:
    """Whether DIFF's reverse may apply to OLD (PATHS' content, a file not held is empty)."""
    return reverse_could_apply(diff, {**dict.fromkeys(paths, b""), **old})


def _between(
    sections: list[tuple[str, list[bytes]]], old: dict[str, bytes], offsets: list[HunkOffset]
) -> int:
    """The telling lines the moved hunks add when every block of them, and no block of a
    hunk that did not move, stands in OLD between the hunk's own place and where it moved
    (context lines on either side counted); else 0."""
    moved = {(unquote(o.file), o.hunk): o.offset for o in offsets}
    found = 0
    for path, hunks in sections:
        lines = [line.rstrip() for line in old.get(path, b"").decode(errors="replace").split("\n")]
        for number, hunk in enumerate(hunks, 1):
            blocks = added_blocks([hunk])
            offset = moved.get((path, number))
            if offset is None:
                if blocks:
                    return 0  # a hunk that writes anew beside moved ones: not this case
                continue
            header = _HEADER.match(hunk)
            if header is None:
                return 0
            start = int(header[1]) - 1
            span = int(header[2] or 1)
            first = min(start, start + offset) - span
            last = max(start, start + offset) + 2 * span
            for block in blocks:
                size = len(block.lines)
                window = range(max(0, first), max(0, last - size) + 1)
                if not any(lines[at : at + size] == block.lines for at in window):
                    return 0
                found += sum(1 for line in block.lines if is_telling(line))
    return found if found >= EVIDENCE else 0
