"""The 3-way merge step: whether git can merge at all, the merge, and its guard.

`git apply --3way` merges a file section only with its preimage blob at hand (`BlobCheck`
asks for all of them in one process), and a clean merge stands only when it writes nothing
upstream has already (`merge_guard.judge_merge`, beside this module). A batch of failed
patches that share no file is merged in one run and guarded together; where that does not
settle it, the caller asks each patch alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from patchkeeper.engine.apply_output import GIT_FATAL, failed_files, output_lines, section_blocks
from patchkeeper.engine.diffs import split_hunks
from patchkeeper.install.plumbing import git
from patchkeeper.install.plumbing.loose_objects import written_blob
from patchkeeper.install.plumbing.scratch_index import ScratchIndex
from patchkeeper.patchset.model import PatchFile

if TYPE_CHECKING:  # made by the merge guard, only when it refuses a merge
    from patchkeeper.engine.doubts import Refusal

_CONFLICTED_RE = re.compile(r"^Applied patch to '(.+)' with conflicts\.$")
_INDEX_LINE_RE = re.compile(r"^index ([0-9a-f]{4,64})\.\.[0-9a-f]{4,64}(?: \d+)?$")


def preimages(diff: bytes) -> dict[str, str | None]:
    """Per file section of DIFF that changes an existing file: the preimage blob its `index`
    line names, or None when it names none (quilt and `diff -u` write no index line)."""
    found: dict[str, str | None] = {}
    for path, header, _ in split_hunks(diff):
        lines = header.decode(errors="surrogateescape").split("\n")
        if any(line.startswith(("new file mode", "copy from")) for line in lines):
            continue  # a file it creates: git needs no preimage to try
        match = next((m for line in lines if (m := _INDEX_LINE_RE.match(line.rstrip()))), None)
        found[path] = match[1] if match else None
    return found


class BlobCheck:
    """Which preimage blobs the scratch index's object store holds, asked lazily and in one
    process per question; a blob once there stays there (objects are never taken away)."""

    def __init__(self, index: ScratchIndex) -> None:
        self.index = index
        self.present: set[str] = set()
        self.absent: set[str] = set()  # matched no object of any store when git was asked

    def mergeable(
        self, patches: Sequence[tuple[bytes, list[str]]], read: Sequence[str] = ()
    ) -> tuple[list[bool], dict[str, bytes]]:
        """Whether `git apply --3way` could merge each (diff, failed files) of PATCHES, and the
        index's content of the paths READ (those it holds), in one `cat-file --batch` at most.

        git merges a file section only with its preimage blob at hand, and applies it directly
        otherwise, which fails as the forward apply did. So a failed section with no index
        line, or whose blob is missing, makes the 3-way attempt fail for sure."""
        wanted: list[list[str | None]] = []
        for diff, files in patches:
            needed = preimages(diff)
            wanted.append([needed[path] for path in files if path in needed])
        ask = sorted({
            blob for blobs in wanted for blob in blobs
            if blob and set(blob) != {"0"} and blob not in self.present
            and not self._settled_here(blob)
        })  # fmt: skip
        paths = [] if any("\n" in path for path in read) else list(read)
        names = [*ask, *(f":{path}" for path in paths)]
        self.absent.difference_update(ask)  # asked again: git's answer now stands
        try:
            found = self.index.read_blobs(names, self.absent) if names else {}
        except git.GitError:  # no clear answer: git's own attempt decides
            found = dict.fromkeys(ask, b"")
        self.present.update(blob for blob in ask if blob in found)
        contents = {path: found[f":{path}"] for path in paths if f":{path}" in found}
        if len(paths) < len(read):
            contents = self.index.read_files(list(read))  # one by one
        can = [
            all(blob is not None and (set(blob) == {"0"} or blob in self.present) for blob in b)
            for b in wanted
        ]
        return can, contents

    def _settled_here(self, blob: str) -> bool:
        """Whether BLOB's presence is known without git: it matched no object when asked, and
        the private store git has written to since says for sure (loose_objects.py)."""
        if blob not in self.absent or self.index.objects is None:
            return False
        now = written_blob(self.index.objects, blob)
        if now is None:
            return False
        if now:
            self.absent.discard(blob)
            self.present.add(blob)
        return True

    def missing(self, diff: bytes, files: list[str]) -> set[str]:
        """The preimage blobs of DIFF's failed FILES not known to be here (none asked)."""
        needed = preimages(diff)
        return {
            blob for path in files if (blob := needed.get(path))
            and set(blob) != {"0"} and blob not in self.present
        }  # fmt: skip


def merge_alone(
    index: ScratchIndex, diff: bytes, before: dict[str, bytes]
) -> tuple[bool, Refusal | None]:
    """Merge DIFF in 3-way; it stays in the index only when it writes nothing upstream has
    (`merge_guard`). BEFORE: the index's content of the diff's files before the merge."""
    saved = index.save()  # a copy of the index file: no write-tree to come back to
    proc = index.apply(diff, "--3way")
    if proc.returncode == 0:
        sections = [(path, hunks) for path, _, hunks in split_hunks(diff)]
        from patchkeeper.engine.merge_guard import judge_merge

        refusal = judge_merge(sections, before, index.read_files([p for p, _ in sections]))
        if refusal is None:
            return True, None
        index.restore(saved)
        return False, refusal
    index.restore(saved)  # drop the conflict stages the failed merge left
    return False, None


def merge_together(
    index: ScratchIndex, variants: list[PatchFile], before: dict[str, bytes]
) -> tuple[dict[int, bool], dict[int, Refusal], dict[str, bytes] | None]:
    """Whether each of VARIANTS (no two share a file; none applies, none is there already)
    merges in 3-way, from one `git apply --3way` of them all and one of those that
    merged cleanly; the index then holds those merges. A clean merge that would write a
    change upstream has is dropped (`merge_guard`): its refusal is returned. A variant that
    leaves out is not settled ({} when none is: the caller asks alone). BEFORE: the index's
    content of the variants' files before any merge (returned, for the conflicts)."""
    saved = index.save()
    diffs = [variant.diff for variant in variants]
    proc = index.apply(b"".join(diffs), "--3way")
    if proc.returncode == 0:
        merged, refused = _guard(index, variants, list(range(len(variants))), before, saved)
        return merged, refused, before
    said = output_lines(proc.stderr)
    index.restore(saved)
    conflicted = {m[1] for line in said if (m := _CONFLICTED_RE.match(line))}
    if proc.returncode == GIT_FATAL or not conflicted:
        return {}, {}, before
    unsure: set[int] = set()  # asked alone
    if any(line.startswith(("error:", "fatal:")) for line in said):
        found = _failing(proc.stderr, variants)
        if found is None:
            return {}, {}, before
        failing, unsure = found
    else:
        failing = {i for i, v in enumerate(variants) if conflicted.intersection(v.files)}
    clean = [i for i in range(len(variants)) if i not in failing and i not in unsure]
    if clean and index.apply(b"".join(diffs[i] for i in clean), "--3way").returncode:
        index.restore(saved)
        return {}, {}, before
    merged, refused = _guard(index, variants, clean, before, saved)
    settled = [i for i in range(len(variants)) if i not in unsure]
    return {i: merged.get(i, False) for i in settled}, refused, before


def _failing(stderr: bytes, variants: list[PatchFile]) -> tuple[set[int], set[int]] | None:
    """For a `--3way` run of VARIANTS that git refused (it said STDERR): those it does not
    merge (a section merged with conflicts, or one git refused naming its file: alone it
    fails the same way, a section's answer being its file's own), and those whose words say
    neither (another error: asked alone). None when the words cannot be told apart per
    section."""
    blocks = section_blocks(stderr)
    counts = [len(split_hunks(variant.diff)) for variant in variants]
    if len(blocks) != sum(counts):
        return None
    failing, unsure, at = set(), set(), 0
    for i, count in enumerate(counts):
        own = blocks[at : at + count]
        at += count
        lines = [line for block in own for line in block]
        if any(_CONFLICTED_RE.match(line) for line in lines) or any(
            failed_files("\n".join(block).encode(errors="surrogateescape")) for block in own
        ):
            failing.add(i)
        elif any(line.startswith("error:") for line in lines):
            unsure.add(i)
    return failing, unsure


def _guard(
    index: ScratchIndex,
    variants: list[PatchFile],
    merged: list[int],
    before: dict[str, bytes],
    saved: tuple[bytes | None, str | None],
) -> tuple[dict[int, bool], dict[int, Refusal]]:
    """The merges of MERGED (in the index now) that may stand; the index then holds only
    those (from SAVED, the index before any of them)."""
    from patchkeeper.engine.merge_guard import judge_merge

    sections = {
        i: [(path, hunks) for path, _, hunks in split_hunks(variants[i].diff)] for i in merged
    }
    after = index.read_files(sorted({p for found in sections.values() for p, _ in found}))
    refused = {
        i: why for i in merged if (why := judge_merge(sections[i], before, after)) is not None
    }
    if refused:
        index.restore(saved)
        kept = [i for i in merged if i not in refused]
        if kept:
            again = index.apply(b"".join(variants[i].diff for i in kept), "--3way")
            if again.returncode != 0:  # not settled: each is asked alone
                index.restore(saved)
                return {}, {}
    return {i: i not in refused for i in merged}, refused
