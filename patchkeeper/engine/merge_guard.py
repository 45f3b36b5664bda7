"""Before a 3-way merge is accepted: does it write a change upstream already has?

`git apply --3way` succeeds wherever the merge has no textual conflict. When upstream took
a fix in a slightly different shape (other context, the block a few lines away), neither a
forward nor a reverse apply is exact, and the merge happily inserts the fix's lines a second
time next to upstream's own copy (measured on xz-utils' `index.c` at 5.8.4 and jq 1.8.2). A
merge that changes nothing at all is upstream having it too. So the merge's result is
compared with the target before it: each block a hunk adds is looked for in the target.

A block is written a second time *at its place* when the merge writes a new copy and an old
copy stands inside the hunk's span around it: between the hunk's first and last context line
as the merge result holds them, or past the hunk's edge where its context is cut short by the
file's start or end (a hunk there has fewer context lines on that side). The same lines
elsewhere in the file (a guard another function has too) prove nothing about this hunk.

- Nothing changed, or the merge writes every block the patch adds a second time at its place
  (at least `EVIDENCE` telling lines in all): `upstream-has-it`; the merge is dropped.
- Some blocks written twice and others new, a block doubled only elsewhere in the file, or
  one telling line alone with nothing new: unclear, so `conflict` with the reason; the merge
  is dropped. A person looks, nothing is written twice.
- No block written twice (or one telling line among new ones, which may stand anywhere):
  the merge stands (`merged-3way`).

A line tells something when it holds a word character and at least 4 characters besides
blanks: a lone `}` or an empty line stands in every file and proves nothing.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from patchkeeper.engine.doubts import Refusal

EVIDENCE = 2  # telling lines that must already be there before upstream is said to have it
_HEADER = re.compile(rb"^@@ -(\d+)")


@dataclass(frozen=True)
class Block:
    """A run of added lines, with the hunk's new-side lines before and after it. OPEN_START /
    OPEN_END: the hunk's context is cut short there by the file's start or end."""

    lines: list[str]
    lead: list[str]
    trail: list[str]
    open_start: bool
    open_end: bool


# A letter or digit: what str.isalnum says of a character (the regex's \w less "_"), found
# in C rather than by a generator over the line's characters.
_ALNUM = re.compile(r"[^\W_]")


def is_telling(line: str) -> bool:
    text = line.strip()
    return len(text) >= 4 and _ALNUM.search(text) is not None


def _hunk_blocks(hunk: bytes) -> list[Block]:
    header, *body = hunk.decode(errors="replace").split("\n")
    body = [line for line in body if line and not line.startswith("\\")]
    new_side = [(line[0], line[1:].rstrip()) for line in body if line[0] in " +"]
    lead_ctx = next((i for i, line in enumerate(body) if line[0] != " "), len(body))
    trail_ctx = next((i for i, line in enumerate(reversed(body)) if line[0] != " "), len(body))
    found = _HEADER.match(header.encode())
    at_start = lead_ctx < trail_ctx or (found is not None and int(found.group(1)) <= 1)
    blocks: list[Block] = []
    at = 0
    while at < len(new_side):
        if new_side[at][0] != "+":
            at += 1
            continue
        end = at
        while end < len(new_side) and new_side[end][0] == "+":
            end += 1
        texts = [text for _, text in new_side]
        blocks.append(Block(texts[at:end], texts[:at], texts[end:], at_start, trail_ctx < lead_ctx))
        at = end
    return [block for block in blocks if any(is_telling(line) for line in block.lines)]


def added_blocks(hunks: Iterable[bytes]) -> list[Block]:
    """The runs of consecutive added lines of HUNKS (raw hunk bytes, `@@` line first)."""
    return [block for hunk in hunks for block in _hunk_blocks(hunk)]


@functools.lru_cache(maxsize=32)
def _lines_of(content: bytes | None) -> list[str]:
    """A file's lines, trailing blanks off, once per content: the guards of a series judge
    the same few files again and again (shared: read only, never changed by a caller)."""
    return [line.rstrip() for line in (content or b"").decode(errors="replace").split("\n")]


def _starts(block: list[str], target: list[str]) -> list[int]:
    """Where BLOCK stands in TARGET, in order: found by `list.index` from its first line, so
    a file costs a scan in C per block rather than a table of all its lines."""
    found: list[int] = []
    first, size, at = block[0], len(block), -1
    while True:
        try:
            at = target.index(first, at + 1)
        except ValueError:
            return found
        if target[at : at + size] == block:
            found.append(at)


def _changed(old_lines: list[str], new_lines: list[str]) -> list[range]:
    """The line ranges of NEW_LINES the merge wrote (inserted or replaced). The common head
    and tail are cut off first: the matcher is quadratic on files of repeated lines. (difflib
    is imported here: only a block that stood there before needs it.)"""
    from difflib import SequenceMatcher

    head = 0
    while head < min(len(old_lines), len(new_lines)) and old_lines[head] == new_lines[head]:
        head += 1
    tail = 0
    while tail < min(len(old_lines), len(new_lines)) - head and (
        old_lines[-1 - tail] == new_lines[-1 - tail]
    ):
        tail += 1
    old_mid = old_lines[head : len(old_lines) - tail]
    new_mid = new_lines[head : len(new_lines) - tail]
    opcodes = SequenceMatcher(None, old_mid, new_mid, autojunk=False).get_opcodes()
    return [
        range(head + j1, head + j2) for tag, _, _, j1, j2 in opcodes if tag in ("insert", "replace")
    ]


def _at_place(block: Block, copy: int, old_copies: list[int]) -> bool:
    """Whether one of OLD_COPIES stands inside the hunk's span around the new copy at COPY:
    with that old copy taken out, it stood between two of the hunk's lines (counted, so a
    context line upstream reworded still counts), or past an edge the hunk has open."""
    size = len(block.lines)
    for old in old_copies:
        at = copy - size if old < copy else copy  # the new copy, the old one taken out
        first = -1 if block.open_start else at - len(block.lead)
        last = float("inf") if block.open_end else at + size + len(block.trail)
        if first < old < last:
            return True
    return False


def judge_merge(
    sections: Iterable[tuple[str, list[bytes]]],
    before: dict[str, bytes],
    after: dict[str, bytes],
    what: str = "a 3-way merge",
) -> Refusal | None:
    """None when the merge of SECTIONS (path, hunks) may stand; else why not. BEFORE and
    AFTER: the target's content of the patch's files before and after the merge. WHAT
    names the write in the reasons (an apply at an offset is judged the same way).

    A block counts as written twice when the merge leaves it more often than before and it
    stood there already (a block the patch moves stands as often after as before); twice at
    its place when an old copy stands inside the hunk's span around the copy the merge wrote
    (`_at_place`), elsewhere otherwise."""
    sections = list(sections)
    if all(before.get(path) == after.get(path) for path, _ in sections):
        return _refusal(True, f"{what} changes nothing: upstream has it already")
    twice = elsewhere = new = 0  # telling lines written a second time (at its place, not), new
    for path, hunks in sections:
        old_lines, new_lines = _lines_of(before.get(path)), _lines_of(after.get(path))
        changed: list[range] | None = None
        for block in added_blocks(hunks):
            telling = sum(1 for line in block.lines if is_telling(line))
            was = len(_starts(block.lines, old_lines))
            now = _starts(block.lines, new_lines)
            if not was or len(now) <= was:
                new += telling
                continue
            changed = _changed(old_lines, new_lines) if changed is None else changed
            written = [
                s
                for s in now
                if any(s < r.stop and r.start < s + len(block.lines) for r in changed)
            ]
            old_copies = [s for s in now if s not in written]
            if any(_at_place(block, copy, old_copies) for copy in written):
                twice += telling
            else:
                elsewhere += telling
    doubled = twice + elsewhere
    if doubled == 0 or (new and doubled < EVIDENCE):
        return None  # nothing written twice, or one line that may stand anywhere
    if not new and not elsewhere and twice >= EVIDENCE:
        return _refusal(
            True,
            f"{what} would write its {twice} added line(s) a second time: "
            "upstream has them already",
        )
    if elsewhere:
        return _refusal(
            False,
            f"{what} would write {elsewhere} added line(s) the file holds elsewhere, "
            "not at the patch's place: unclear whether upstream has the fix, so nothing is "
            "written",
        )
    return _refusal(
        False,
        f"{what} would write {twice} added line(s) upstream already has "
        f"({new} new): unclear whether upstream has the fix, so nothing is written",
    )


def _refusal(has_it: bool, detail: str) -> Refusal:
    from patchkeeper.engine.doubts import Refusal  # only a refused write makes one

    return Refusal(has_it, detail)
