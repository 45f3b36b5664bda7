"""Which hunks of a failed patch conflict, and where the target comes closest to each.

A conflict names each failing hunk with the lines it expected and, at the place where the
target best matches them, the lines that differ: what a person needs to mend the patch.
Placing a hunk is a vote of its lines (`best_start_of`), so the cost grows with the hunk,
not with the file.
"""

from __future__ import annotations

import functools
import re

from patchkeeper.engine.apply_output import output_lines, stderr_blocks
from patchkeeper.engine.diffs import split_hunks
from patchkeeper.install.plumbing.scratch_index import ScratchIndex
from patchkeeper.model.conflict_details import HunkConflict, Mismatch


def _text_lines(data: bytes) -> list[str]:
    """Lines as git sees them: broken at "\n" only (a form feed or a vertical tab, which
    str.splitlines also breaks at, is content)."""
    lines = data.decode(errors="replace").split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


# about where a hunk belongs: it casts no vote.
COMMON_LINE = 50


def line_positions(target: list[str], wanted: set[str]) -> dict[str, list[int]]:
    """Where each line of TARGET that is one of WANTED stands (the lines the hunks of a file
    look up; shared by them): the other lines are passed over in one comprehension, with no
    list made for each, the cost of a file with many lines and few hunks."""
    positions: dict[str, list[int]] = {}
    for number in [n for n, line in enumerate(target) if line in wanted]:
        if (found := positions.get(target[number])) is None:
            positions[target[number]] = [number]
        else:
            found.append(number)
    return positions


def best_start_of(
    target: list[str],
    expected: list[str],
    hint: int,
    positions: dict[str, list[int]] | None = None,
) -> int | None:
    """The start in TARGET where the most lines of EXPECTED line up (ties: nearest HINT);
    None when no line does. Each expected line votes for the starts that would line it up
    with an equal target line, so the cost grows with the hunk, not with the file."""
    if not expected:
        return None
    positions = positions if positions is not None else line_positions(target, set(expected))
    last = max(0, len(target) - len(expected))
    votes: dict[int, int] = {}
    for offset, line in enumerate(expected):
        found = positions.get(line, ())
        if len(found) > COMMON_LINE:
            continue
        for position in found:
            start = position - offset
            if 0 <= start <= last:
                votes[start] = votes.get(start, 0) + 1
    if not votes:
        return None
    return max(votes, key=lambda start: (votes[start], -abs(start - hint)))


def closest_mismatches(
    target: list[str],
    expected: list[str],
    hint: int,
    positions: dict[str, list[int]] | None = None,
) -> tuple[Mismatch, ...]:
    """Where the target best matches EXPECTED (`best_start_of`), the lines that differ."""
    best_start = best_start_of(target, expected, hint, positions)
    if best_start is None:
        return ()
    window = target[best_start : best_start + len(expected)]
    return tuple(
        Mismatch(best_start + offset + 1, want, window[offset] if offset < len(window) else None)
        for offset, want in enumerate(expected)
        if offset >= len(window) or window[offset] != want
    )


@functools.lru_cache(maxsize=16)
def _target_lines(content: bytes) -> list[str]:
    """A file's lines, once per content: the conflicts of a series often fail on the same
    few files (read only, never changed by the caller)."""
    return _text_lines(content)


def _hunk_start(header: str) -> int:
    match = re.match(r"^@@ -(\d+)", header)
    return int(match.group(1)) - 1 if match else 0


def conflicting_hunks(
    index: ScratchIndex,
    diff: bytes,
    files: list[str],
    forward: bytes | None = None,
    contents: dict[str, bytes] | None = None,
) -> list[HunkConflict]:
    """Which hunks fail, each checked alone against the target, with the lines it expected
    and, where the target is closest to them, the lines that differ.

    FORWARD is what `git apply -v` of the whole DIFF said on this very index: a failed file
    section with a single hunk failed exactly as it says there (the hunk alone is the same
    input), so only sections with several hunks are checked hunk by hunk. CONTENTS: the
    index's content of the files, when the caller has read it already."""
    sections = [(p, h, hs) for p, h, hs in split_hunks(diff) if not files or p in files]
    if contents is None:
        contents = index.read_files([path for path, _, _ in sections])
    blocks = stderr_blocks(forward) if forward is not None else {}
    conflicts = []
    for path, header, hunks in sections:
        if not hunks:
            conflicts.append(HunkConflict(path, 0, "", (), "file-level change does not apply"))
        target = _target_lines(contents.get(path) or b"")
        wanted = {
            line[1:] for hunk in hunks for line in _text_lines(hunk)[1:] if line[:1] in (" ", "-")
        }
        positions = line_positions(target, wanted)
        for number, hunk in enumerate(hunks, 1):
            first, *body = _text_lines(hunk)
            expected = tuple(line[1:] for line in body if line[:1] in (" ", "-"))
            if len(hunks) == 1 and path in files and path in blocks:
                said = blocks[path]
            elif len(hunks) > 1:
                # Many hunks: asking git about each one alone costs a process and a search of
                # the whole file per hunk. A hunk whose lines stand together in the file
                # lands (git found the file's failure elsewhere); the others are reported.
                start = best_start_of(target, list(expected), _hunk_start(first), positions)
                if start is not None and tuple(target[start : start + len(expected)]) == expected:
                    continue
                said = []
            else:
                proc = index.apply(header + hunk, "--check")
                if proc.returncode == 0:
                    continue
                said = output_lines(proc.stderr)
            # git's own words ("does not exist in index"), never a source line it quotes
            reason = next(
                (m for m in said if m.startswith("error: ") and "exist" in m),
                "context does not match",
            )
            mismatches = closest_mismatches(target, list(expected), _hunk_start(first), positions)
            conflicts.append(HunkConflict(path, number, first, expected, reason, mismatches))
    return conflicts
