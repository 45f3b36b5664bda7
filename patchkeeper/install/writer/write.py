"""The one writer of the install's work tree: a kill at any instant leaves each path old or new.

Every command that writes the tree (apply, unapply, leftovers restore, each phase of update,
recover) decides the new contents in git's object store first (a scratch index, a merge),
then hands the two trees to `write_trees`, which:

1. lists the paths that differ (`git diff-tree`, no renames) and reads their new content;
2. reads each path's old content from disk and checks it is what the old tree says (else the
   tree changed under us, and nothing is written);
3. records every path with its old and new content and mode in `tree-write.json` under the
   state folder, synced, BEFORE anything in the tree changes;
4. writes each new file to a temporary file beside it (`.patchkeeper-ID-K`), syncs it, and
   renames it over the old one; a deletion is an unlink, a symlink is made at the temporary
   name and renamed too, so no path is ever missing or half written;
5. removes the journal and syncs the state folder, which makes every rename before it
   durable too on a file system with one ordered metadata journal (ext4, xfs): one folder
   sync per write, not one per folder touched.

A write that fails half-way (disk full, read-only, permission) undoes the paths it had
written, from the journal, and says which path and why (`EnvironmentProblem`). A kill leaves
the journal: `settle` (writer/settle.py, run by every writing command before it reads the tree, and
by `recover`) undoes the interrupted write whole, and keeps a path changed by someone since in
a ref that `leftovers` lists.

Its parts: what changes, path by path (writer/changes.py: steps 1 and 2); the journal
(writer/write_journal.py: steps 3 and 5); putting each path in place (writer/put_paths.py: step 4);
undoing after a kill (writer/settle.py). This module is the sequence, and the one way in.

One fsync per written file and one per folder: the cost follows the paths written, never the
size of the tree.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from patchkeeper.install.checkout.install import Install
from patchkeeper.install.checkout.tree_objects import MergePreview, changed_paths
from patchkeeper.install.plumbing.tree_diff import Listed
from patchkeeper.install.writer.changes import changes_between
from patchkeeper.install.writer.put_paths import put_all
from patchkeeper.install.writer.write_journal import clear_journal, save_journal
from patchkeeper.model.errors import EnvironmentProblem


def write_trees(
    root: Path,
    state_dir: Path,
    command: str,
    old_tree: str,
    new_tree: str,
    paths: Iterable[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    listed: Sequence[Listed] | None = None,
) -> list[str]:
    """Turn the work tree at ROOT from OLD_TREE into NEW_TREE (see the module docstring);
    ENV reads the trees (a scratch index's private objects); LISTED is their diff when the
    caller has it (`tree_diff.list_tree_diff`). Returns the paths written."""
    changes = changes_between(root, old_tree, new_tree, paths, env=env, listed=listed)
    if not changes:
        return []
    write_id = os.urandom(6).hex()
    save_journal(state_dir, command, write_id, changes)
    try:
        put_all(root, changes, write_id)
    except EnvironmentProblem as problem:
        if problem.undone:
            clear_journal(state_dir)
        raise
    clear_journal(state_dir)
    return [change.path for change in changes]


def write_merge(
    install: Install,
    preview: MergePreview,
    *,
    markers: bool = False,
    command: str = "leftovers restore",
) -> list[str]:
    """Write the merged content of every non-conflicting path (writer/write.py: each file
    old or new, whatever kills us); COMMAND is what its journal says was writing.

    With MARKERS, conflicting paths are written too, holding git's conflict markers for a
    person to resolve. The work tree holds PREVIEW.ours for these paths (that is how it was
    read), so the diff applies exactly; the install's index is not touched.
    """
    paths = [
        p
        for p in changed_paths(install.path, preview.ours, preview.result)
        if markers or p not in preview.conflicts
    ]
    if paths:
        write_trees(install.path, install.state_dir, command, preview.ours, preview.result, paths)
    return paths
