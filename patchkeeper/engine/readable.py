"""Does git itself read each patch? Asked by `lint`, with no install.

The header parser and unidiff accept some diffs that git refuses, or on which git 2.39 even
aborts (a mangled `new file mode` line). Variants are given to `git apply --cached --check`
against an empty index in a throw-away repository: "does not exist in index" is expected
there and fine; git's "cannot read" answer (exit 128, or a crash) is a problem.

git reads its whole input before it checks a file of it, so many variants go to one process.
A batch is trusted only when git read it (no exit 128, no crash) and said "Checking patch"
once for each of its `diff --git` sections; otherwise it is split in halves, down to each
variant asked alone, as it always was (an unreadable one's reason is git's own last line).
Variants in one batch touch no file in common and end their last line, so none is read, or
checked, differently for its neighbours.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from patchkeeper.install.plumbing import git
from patchkeeper.install.plumbing.scratch_index import GIT_CANNOT_READ, ScratchIndex, scratch_index
from patchkeeper.model.problems import Problem
from patchkeeper.patchset.model import PatchFile, PatchSet


def unreadable_by_git(patch_set: PatchSet) -> list[Problem]:
    variants = [v for patch in patch_set.patches for v in patch.variants if v.diff]
    if not variants:
        return []
    unreadable: dict[int, str] = {}  # index in VARIANTS -> git's reason
    with tempfile.TemporaryDirectory(prefix="patchkeeper-lint-") as empty:
        git.run(["init", "-q", empty], Path(empty))
        with scratch_index(Path(empty), private_objects=True) as index:
            for batch in _batches(variants):
                _judge(index, variants, batch, unreadable)
    return [
        Problem(variants[i].path, 1, f"git cannot read the diff: {reason}")
        for i, reason in sorted(unreadable.items())
    ]


def _batches(variants: list[PatchFile]) -> list[list[int]]:
    """Indexes of VARIANTS in batches whose members touch no file in common (first fit, in
    order); a variant touching no file, or whose last line has no line end, goes alone."""
    shared: list[tuple[list[int], set[str]]] = []
    alone: list[list[int]] = []
    for i, variant in enumerate(variants):
        touched = set(variant.files)
        if not touched or not variant.diff.endswith(b"\n"):
            alone.append([i])
        elif (fits := next((b for b in shared if not b[1] & touched), None)) is not None:
            fits[0].append(i)
            fits[1].update(touched)
        else:
            shared.append(([i], touched))
    return [members for members, _ in shared] + alone


def _sections(diff: bytes) -> int:
    return diff.count(b"\ndiff --git ") + diff.startswith(b"diff --git ")


def _judge(
    index: ScratchIndex, variants: list[PatchFile], batch: list[int], unreadable: dict[int, str]
) -> None:
    """Put each variant of BATCH (indexes in VARIANTS) git cannot read into UNREADABLE."""
    diffs = [variants[i].diff for i in batch]
    proc = index.apply(b"".join(diffs), "--check")
    if len(batch) == 1:
        if proc.returncode == GIT_CANNOT_READ:
            said = proc.stderr.decode(errors="replace").strip().splitlines()
            unreadable[batch[0]] = said[-1] if said else "no reason given"
        return
    checked = sum(line.startswith(b"Checking patch ") for line in proc.stderr.splitlines())
    if proc.returncode != GIT_CANNOT_READ and checked == sum(map(_sections, diffs)):
        return
    half = len(batch) // 2
    _judge(index, variants, batch[:half], unreadable)
    _judge(index, variants, batch[half:], unreadable)
