"""After a kill: undo the interrupted tree write its journal names, path by path.

A kill during a write of the work tree (writer/write.py) leaves its journal
(writer/write_journal.py). `settle` (run by every writing command before it reads the tree, and
by `recover`) puts each path back as it was before the write, removing the temporary files,
so the command that was killed is undone whole and the one that runs next starts from a
consistent tree. A path that holds neither the old nor the new content was changed by
someone after the crash: it is left as it is, never taken for ours, and its old content is
kept in a ref (`refs/patchkeeper/interrupted/ID`) that `leftovers` lists until a person
settles it. A kill during a write of the state (system/durable.py) can leave a temporary file there:
`settle` removes it once its writer is gone.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from patchkeeper.install.checkout.tree_objects import commit_tree
from patchkeeper.install.plumbing import git
from patchkeeper.install.system.durable import remove_dead_temps
from patchkeeper.install.writer.changes import Change, on_disk
from patchkeeper.install.writer.put_paths import put, temp_name
from patchkeeper.install.writer.write_journal import clear_journal, load_journal
from patchkeeper.model import nextstep
from patchkeeper.model.errors import environment_problem

INTERRUPTED_PREFIX = "refs/patchkeeper/interrupted"


@dataclass
class Settled:
    """What `settle` did with an interrupted write."""

    command: str
    undone: list[str] = field(default_factory=list)  # put back as they were before it
    kept: list[str] = field(default_factory=list)  # changed by someone since: left alone
    kept_ref: str | None = None  # holds KEPT's content from before the write
    restore: str = ""  # the command that merges that content back

    def describe(self) -> str:
        said = (
            f"an interrupted write of `{self.command}` was undone: {len(self.undone)} file(s) "
            "put back as they were before it"
        )
        if self.kept:
            said += (
                f"; changed since, so left as they are: {', '.join(self.kept)} (their content "
                f"before it is in {self.kept_ref}, listed by `patchkeeper leftovers`; merge it "
                f"back with: {self.restore})"
            )
        return said


def _kept_ref(root: Path, write_id: str, changes: list[Change]) -> tuple[str | None, str]:
    """A commit on HEAD holding CHANGES' old content, under a ref `leftovers` lists, and the
    command that restores it."""
    head = git.rev_parse(root, "HEAD")
    if head is None:
        return None, ""
    from patchkeeper.install.plumbing.scratch_index import scratch_index

    listing = b""
    for change in changes:
        if change.old is None:  # mode 0: the entry goes
            listing += f"0 {'0' * len(head)}\t{change.path}\0".encode(errors="surrogateescape")
            continue
        sha = git.out(["hash-object", "-w", "--no-filters", "--stdin"], root, stdin=change.old)
        listing += f"{change.old_mode} {sha}\t{change.path}\0".encode(errors="surrogateescape")
    with scratch_index(root) as index:
        index.read_tree(f"{head}^{{tree}}")
        index.add_entries(listing)
        tree = index.write_tree()
    ref = f"{INTERRUPTED_PREFIX}/{write_id}"
    message = "patchkeeper: content from before an interrupted write, changed since"
    commit = commit_tree(root, tree, head, message)
    git.run(["update-ref", ref, commit], root)
    return ref, nextstep.command("leftovers", "restore", commit[:10], install=root)


def settle(root: Path, state_dir: Path) -> Settled | None:
    """Undo an interrupted write, path by path (see the module docstring); None when there
    was none. Safe to run again if it is itself interrupted."""
    remove_dead_temps(state_dir)  # a killed state write's temporary file
    journaled = load_journal(state_dir)
    if journaled is None:
        return None
    write_id, command, changes = journaled
    settled = Settled(command)
    kept: list[Change] = []
    for number, change in reversed(list(enumerate(changes))):
        folder = (root / change.path).parent
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            os.unlink(folder / temp_name(write_id, number))
        now = on_disk(root, change.path)
        new = None if change.new_mode is None else (change.new_mode, change.new)
        old = None if change.old_mode is None else (change.old_mode, change.old)
        if now == old:
            continue
        if now == new:
            try:
                put(root, change.reversed(), temp_name(write_id, number))
            except OSError as exc:
                raise environment_problem(exc, root / change.path, undone=False) from None
            settled.undone.append(change.path)
        else:
            kept.append(change)
    if kept:
        settled.kept = sorted(c.path for c in kept)
        settled.kept_ref, settled.restore = _kept_ref(root, write_id, kept)
    clear_journal(state_dir)
    settled.undone.sort()
    return settled
