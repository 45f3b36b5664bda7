"""Before a 3-way merge is accepted: does it write a change upstream already has?

`git apply --3way` succeeds wherever the merge has no textual conflict. When upstream took
a fix in a slightly different shape (other context, a moved block), neither a forward nor a
reverse apply is exact, and the merge happily inserts the fix's lines a second time next to
upstream's own copy (measured on xz-utils' `index.c` at 5.8.4 and jq 1.8.2). A merge that
changes nothing at all is upstream having it too. So the merge's result is compared with
the target before it: the lines each hunk adds are looked for in the target as it was.

- Nothing changed, or the merge writes every block the patch adds a second time (at least
  `EVIDENCE` telling lines in all): `upstream-has-it`; the merge is dropped.
- Some blocks written twice and others new, or one telling line alone with nothing new:
  unclear, so `conflict` with the reason; the merge is dropped. A person looks, nothing is
  written twice.
- No block written twice (or one telling line among new ones, which may stand anywhere):
  the merge stands (`merged-3way`).

A line tells something when it holds a word character and at least 4 characters besides
blanks: a lone `}` or an empty line stands in every file and proves nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

EVIDENCE = 2  # telling lines that must already be there before upstream is said to have it


@dataclass(frozen=True)
class Refusal:
    """Why a clean 3-way merge is not accepted: upstream has the change, or it is unclear."""

    has_it: bool
    detail: str


def _telling(line: str) -> bool:
    text = line.strip()
    return len(text) >= 4 and any(char.isalnum() for char in text)


def added_blocks(hunks: Iterable[bytes]) -> list[list[str]]:
    """The runs of consecutive added lines of HUNKS (raw hunk bytes, `@@` line first)."""
    blocks: list[list[str]] = []
    for hunk in hunks:
        run: list[str] = []
        for line in hunk.decode(errors="replace").split("\n")[1:]:
            if line.startswith("+"):
                run.append(line[1:].rstrip())
                continue
            if run:
                blocks.append(run)
            run = []
        if run:
            blocks.append(run)
    return [block for block in blocks if any(_telling(line) for line in block)]


def _lines_of(content: bytes | None) -> list[str]:
    return [line.rstrip() for line in (content or b"").decode(errors="replace").split("\n")]


def _count(block: list[str], target: list[str], where: dict[str, list[int]]) -> int:
    """How often BLOCK stands in TARGET (WHERE: each line's positions)."""
    starts = where.get(block[0], ())
    return sum(1 for start in starts if target[start : start + len(block)] == block)


def _positions(target: list[str]) -> dict[str, list[int]]:
    where: dict[str, list[int]] = {}
    for number, line in enumerate(target):
        where.setdefault(line, []).append(number)
    return where


def judge_merge(
    sections: Iterable[tuple[str, list[bytes]]],
    before: dict[str, bytes],
    after: dict[str, bytes],
) -> Refusal | None:
    """None when the merge of SECTIONS (path, hunks) may stand; else why not. BEFORE and
    AFTER: the target's content of the patch's files before and after the merge.

    A block counts as written twice when the merge leaves it more often than before and it
    stood there already (a block the patch moves stands as often after as before)."""
    sections = list(sections)
    if all(before.get(path) == after.get(path) for path, _ in sections):
        return Refusal(True, "a 3-way merge changes nothing: upstream has it already")
    twice = new = 0  # telling lines of added blocks the merge writes a second time, and not
    for path, hunks in sections:
        old_lines, new_lines = _lines_of(before.get(path)), _lines_of(after.get(path))
        old_where, new_where = _positions(old_lines), _positions(new_lines)
        for block in added_blocks(hunks):
            telling = sum(1 for line in block if _telling(line))
            was = _count(block, old_lines, old_where)
            if was and _count(block, new_lines, new_where) > was:
                twice += telling
            else:
                new += telling
    if twice == 0 or (new and twice < EVIDENCE):
        return None  # nothing written twice, or one line that may stand anywhere
    if not new and twice >= EVIDENCE:
        return Refusal(
            True,
            f"a 3-way merge would write its {twice} added line(s) a second time: "
            "upstream has them already",
        )
    return Refusal(
        False,
        f"a 3-way merge would write {twice} added line(s) upstream already has "
        f"({new} new): unclear whether upstream has the fix, so nothing is written",
    )
