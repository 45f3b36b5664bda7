"""Take a patch's diff from the work tree: the diff between "HEAD plus the patches before it"
and "the work tree minus the patches after it", over the patch's own paths, so other patches'
lines never leak into it (what `record` and `refresh` write; engine/patch_writer.py).

For `refresh` of a patch that is not in place (it conflicted, so `apply` wrote none of it),
the files the work tree leaves as they were are kept from the patch as written: the hand fix
was made in the conflicting files, and a file the patch creates, or one whose lines still
apply, is not in the tree to be taken from it. Those parts are written to the work tree too,
so that what is recorded as applied is all there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from patchkeeper.engine.apply_output import failed_files
from patchkeeper.engine.diffs import split_hunks
from patchkeeper.install.checkout.install import Install
from patchkeeper.install.plumbing import git
from patchkeeper.install.plumbing.scratch_index import ScratchIndex, scratch_index, tree_diff
from patchkeeper.install.records.applied import load_applied, written_diff
from patchkeeper.install.writer.write import write_trees
from patchkeeper.model.errors import UserError
from patchkeeper.patchset.model import PatchFile, PatchSet


@dataclass(frozen=True)
class WorkTreeDiff:
    """What the work tree gives for a patch: its new DIFF, and the files KEPT from the patch
    as written (the tree left them as they were; they are written to it)."""

    diff: bytes
    kept: tuple[str, ...] = ()


def work_tree_diff(
    install: Install,
    patch_set: PatchSet,
    name: str,
    paths: list[str],
    keep_from: PatchFile | None = None,
) -> WorkTreeDiff:
    """The diff of NAME over PATHS, from the work tree; with KEEP_FROM, the parts of that
    patch file for paths the work tree leaves as they were are kept (see the module's
    docstring) and written to the work tree, each file old or new (the tree writer's
    journal)."""
    if install.head() is None:
        raise UserError(f"{install.path}: HEAD does not name a commit yet")
    records = load_applied(install.state_dir)
    order = [p.name for p in patch_set.patches]
    position = order.index(name) if name in order else len(order)
    diffs = {other: written_diff(install.state_dir, records[other]) for other in records}
    before = [n for n in order[:position] if n in records]
    after = [n for n in order[position + 1 :] if n in records]
    # Other patches touch other files too: load all of them, so their diffs apply whole.
    touched = set(paths) | {p for n in before + after for p, _, _ in split_hunks(diffs[n])}
    with scratch_index(install.path) as index:
        index.load_ref("HEAD", touched)
        for other in before:
            _must_apply(index, diffs[other], other)
        base = index.write_tree()
        index.load_worktree(touched)
        for other in reversed(after):
            _must_apply(index, diffs[other], other, "--reverse")
        taken = index.write_tree()
        kept, sections = _untouched(install.path, base, taken, keep_from)
        if not kept:
            return WorkTreeDiff(tree_diff(install.path, base, taken, paths))
        _must_keep(index, sections, keep_from)
        diff = tree_diff(install.path, base, index.write_tree(), paths)
        index.load_worktree(kept)  # the tree as it is, later patches in place
        as_it_is = index.write_tree()
        _must_keep(index, sections, keep_from)
        write_trees(
            install.path,
            install.state_dir,
            "refresh",
            as_it_is,
            index.write_tree(),
            kept,
            env=index.env,
        )
        return WorkTreeDiff(diff, tuple(kept))


def _untouched(
    repo: Path, base: str, taken: str, variant: PatchFile | None
) -> tuple[list[str], bytes]:
    """The files VARIANT changes that TAKEN (the work tree's) holds as BASE does, and
    VARIANT's own sections for them; none when that is all of them (the work tree holds
    nothing of the patch to refresh it from), or when there is no VARIANT to keep from."""
    if variant is None:
        return [], b""
    changed = git.out(
        ["diff-tree", "-r", "-z", "--name-only", "--no-renames", base, taken, "--", *variant.files],
        repo,
    ).split("\0")
    own = [(path, header + b"".join(hunks)) for path, header, hunks in split_hunks(variant.diff)]
    kept = [(path, section) for path, section in own if path not in changed]
    if len(kept) == len(own):
        return [], b""
    return [path for path, _ in kept], b"".join(section for _, section in kept)


def _must_keep(index: ScratchIndex, sections: bytes, variant: PatchFile) -> None:
    proc = index.apply(sections)
    if proc.returncode != 0:
        files = ", ".join(failed_files(proc.stderr)) or "its other files"
        raise UserError(
            f"{variant.path}: the work tree leaves {files} as upstream has it, and the patch's "
            "change to it no longer applies: fix it by hand as well, then refresh"
        )


def _must_apply(index: ScratchIndex, diff: bytes, name: str, *flags: str) -> None:
    if index.apply(diff, *flags).returncode != 0:
        raise UserError(
            f"{name}: what patchkeeper wrote for it is no longer in the tree as recorded "
            "(see `patchkeeper status`); settle that first"
        )
