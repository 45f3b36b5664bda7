"""The engine's typed state and results: what one classification judges with, what its steps
share, and what it hands a writer.

- `Recorded` (recorded.py): what the state says patchkeeper wrote for one patch (the
  caller's input, work-tree targets only);
- `Judging`: the fixed facts every patch is judged with (version, records, conditions);
- `TrialState`: the scratch index and what the steps (batches, one patch, merges) leave on it;
- `Classification`: every patch's result and, for a writer, the diffs.

The steps are functions over these (batches.py, judge.py, one_patch.py), so
each one's inputs and outputs are named rather than read from one big object.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.version import Version

from patchkeeper.engine.diffs import split_hunks
from patchkeeper.engine.merging import BlobCheck
from patchkeeper.install.plumbing.git import GitError
from patchkeeper.install.plumbing.scratch_index import IndexFolder, ScratchIndex
from patchkeeper.model import outcomes as oc
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.model import Patch, PatchFile, spec_contains

if TYPE_CHECKING:  # made by patching.py, for the work tree only
    from patchkeeper.engine.recorded import Recorded


@dataclass(frozen=True)
class Judging:
    """What every patch of one classification is judged with."""

    version: Version | None
    recorded: dict[str, Recorded]
    from_upstream: Callable[[PatchFile], bool] | None
    has_by_content: dict[Path, str]  # variant path -> why upstream has it (all conditions hold)
    was_in_place: frozenset[str]
    repo: Path  # for the commands a result names
    patches: Path
    upstream_ref: str | None = None  # the commit whose content is upstream's (classify's)

    def upstream_has(self, variant: PatchFile) -> str | None:
        """Why upstream has VARIANT without trying it (its header, its conditions), or None."""
        if spec_contains(variant.upstream_fixed_in, self.version):
            return f"{variant.upstream_fixed_in_reason}{self.version}"
        if variant.path in self.has_by_content:
            return self.has_by_content[variant.path]
        return None


# A patch to try in a batch: its patch, its variant, its result (filled in).
Item = tuple[Patch, PatchFile, PatchResult]


@dataclass
class TrialState:
    """One classification's scratch index, and what trying patches on it leaves for the rest.

    TREES: a writer needs each patch's trees (and the combined diff). BATCHED: patches applied
    in a batch, with no other patch on their files: name -> files (their diff is their part of
    the combined diff). BLOBS: which preimage blobs the index's objects hold (for 3-way)."""

    index: ScratchIndex
    judging: Judging
    trees: bool
    blobs: BlobCheck
    batched: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass
class Classification:
    """Every patch's result; for a writer, the combined diff and each patch's own diff.

    The scratch index's trees (and, with private objects, the objects) stay until `close`
    (or until this object is dropped), so the diffs can be taken after classification.
    """

    repo: Path
    results: list[PatchResult]
    start_tree: str | None  # None: classified for reading only (no trees were written)
    final_tree: str | None
    index: ScratchIndex | None = field(default=None, repr=False)
    scratch: IndexFolder | None = field(default=None, repr=False)
    # Patches applied in a batch, with no other patch on their files: name -> files.
    batched: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)
    _combined: bytes | None = field(default=None, repr=False)

    def _diff(self, old: str, new: str) -> bytes:
        if self.index is None:
            raise GitError("internal: this classification kept no trees")
        return self.index.diff(old, new)

    def combined_diff(self) -> bytes:
        if self.start_tree is None or self.final_tree is None:
            raise GitError("internal: this classification kept no trees")
        if self._combined is None:
            self._combined = self._diff(self.start_tree, self.final_tree)
        return self._combined

    def patch_diff(self, result: PatchResult) -> bytes | None:
        """The exact diff RESULT's patch made to the target (what a record keeps)."""
        if result.trees:
            return self._diff(*result.trees)
        files = self.batched.get(result.name)
        if not files or result.outcome not in oc.WRITES:
            return None
        own = set(files)
        diff = b"".join(
            header + b"".join(hunks)
            for path, header, hunks in split_hunks(self.combined_diff())
            if path in own
        )
        return diff or None

    def close(self) -> None:
        if self.scratch is not None:
            self.scratch.close()
            self.scratch = None
