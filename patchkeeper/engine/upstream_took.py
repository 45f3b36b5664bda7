"""Upstream took it, by content: how much of a patch that neither applies nor reverses the
target already holds.

A fix upstream took rarely comes back byte for byte: a context line is reworded, the block
lands a few lines away, a neighbour hunk is rewritten. Then neither the forward nor the
reverse apply is exact, and the patch is a `conflict` like one that needs porting. What tells
the two apart is content: per file and hunk, the telling lines the patch adds that stand in
the target, and the telling lines it removes that no longer do (a line that tells something,
`merge_guard.is_telling`: a lone `}` or a blank line proves nothing). Debian's series show the
measure: of the patches Debian dropped because upstream took them, 77 had at least 90% of
their added lines present and their removed lines gone in the new release (issue 27).

This is evidence, never proof: the outcome stays `conflict` (exit 3), with the qualifier
"upstream appears to have this (N of M hunks)" for a person to confirm and retire the patch.
And where quilt's fuzz would apply the patch (GNU patch --fuzz=2: up to two context lines of
each hunk end ignored; `git apply -C1` asks git the same), that is said as a hint for the
person porting it. Nothing is ever written with fuzz.
"""

from __future__ import annotations

import functools

from patchkeeper.engine.could_apply import fuzz_could_apply
from patchkeeper.engine.diffs import split_hunks
from patchkeeper.engine.merge_guard import EVIDENCE, is_telling
from patchkeeper.install.plumbing.scratch_index import ScratchIndex
from patchkeeper.model.conflict_details import TOOK_SHARE, HunkHeld, UpstreamTook


def _hunk_held(path: str, number: int, hunk: bytes, present: set[str]) -> HunkHeld | None:
    """HUNK measured against the lines of its file (PRESENT); None when it has no telling
    added or removed line (it says nothing either way)."""
    body = hunk.decode(errors="replace").split("\n")[1:]
    added = [line[1:].strip() for line in body if line[:1] == "+" and is_telling(line[1:])]
    kept = {line[1:].strip() for line in body if line[:1] in (" ", "+")}
    removed = [
        text
        for line in body
        if line[:1] == "-" and is_telling(line[1:]) and (text := line[1:].strip()) not in kept
    ]
    if not added and not removed:
        return None
    return HunkHeld(
        path,
        number,
        len(added),
        sum(1 for line in added if line in present),
        len(removed),
        sum(1 for line in removed if line not in present),
    )


@functools.lru_cache(maxsize=16)
def _stripped_lines(content: bytes) -> frozenset[str]:
    """A file's lines, blanks at either end taken off, once per content (`map`: no Python
    frame per line, the measure reads every line of the files of every conflict)."""
    return frozenset(map(str.strip, content.decode(errors="replace").split("\n")))


def measure(
    index: ScratchIndex, diff: bytes, contents: dict[str, bytes], fuzz: bool | None = None
) -> UpstreamTook | None:
    """How much of DIFF the target on INDEX holds (CONTENTS: the files the caller has read
    already); None when no hunk has a telling line. FUZZ: whether `git apply --check -C1`
    succeeds here, when the caller asked already."""
    sections = split_hunks(diff)
    unread = [path for path, _, _ in sections if path not in contents]
    if unread:
        contents = {**contents, **index.read_files(unread)}
    hunks: list[HunkHeld] = []
    for path, _, raw_hunks in sections:
        present = _stripped_lines(contents.get(path, b""))
        for number, hunk in enumerate(raw_hunks, 1):
            if (held := _hunk_held(path, number, hunk, present)) is not None:
                hunks.append(held)
    if not hunks:
        return None
    found = sum(h.added_present + h.removed_gone for h in hunks)
    total = sum(h.added + h.removed for h in hunks)
    appears = found >= EVIDENCE and found >= TOOK_SHARE * total
    if fuzz is None:
        fuzz = (
            fuzz_could_apply(diff, contents) and not index.apply(diff, "--check", "-C1").returncode
        )
    return UpstreamTook(tuple(hunks), appears, fuzz)
