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
the journal: `settle` (run by every writing command before it reads the tree, and by
`recover`) puts each path back as it was before the write, removing the temporary files,
so the command that was killed is undone whole and the one that runs next starts from a
consistent tree. A path that holds neither the old nor the new content was changed by someone
after the crash: it is left as it is, never taken for ours, and its old content is kept in a
ref (`refs/patchkeeper/interrupted/ID`) that `leftovers` lists until a person settles it.

One fsync per written file and one per folder: the cost follows the paths written, never the
size of the tree.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import stat
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from patchkeeper.install import git
from patchkeeper.install.checkout import Install
from patchkeeper.install.files import atomic_write, sync_folder
from patchkeeper.install.journal import checkpoint
from patchkeeper.install.trees import MergePreview, changed_paths, commit_tree
from patchkeeper.model import nextstep
from patchkeeper.model.errors import EnvironmentProblem, environment_problem

JOURNAL_FILE = "tree-write.json"
INTERRUPTED_PREFIX = "refs/patchkeeper/interrupted"
FILE, EXECUTABLE, SYMLINK = "100644", "100755", "120000"
_GITLINK = "160000"


@dataclass(frozen=True)
class Change:
    """One path's old and new state; a mode of None means the path is absent."""

    path: str
    old_mode: str | None
    old: bytes | None
    new_mode: str | None
    new: bytes | None

    def reversed(self) -> Change:
        return Change(self.path, self.new_mode, self.new, self.old_mode, self.old)


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


# ---------------------------------------------------------------- reading both sides


def symlinked_folder(root: Path, path: str) -> str | None:
    """The first folder of PATH (under ROOT) that is a symbolic link, or None."""
    parts = Path(path).parts[:-1]
    for depth in range(1, len(parts) + 1):
        if root.joinpath(*parts[:depth]).is_symlink():
            return "/".join(parts[:depth])
    return None


def _blob_id(data: bytes, width: int) -> str:
    digest = hashlib.sha1 if width == 40 else hashlib.sha256
    return digest(b"blob %d\0" % len(data) + data).hexdigest()


def _on_disk(root: Path, path: str) -> tuple[str, bytes] | None:
    """PATH's mode and bytes in the work tree (a symlink's target), or None when absent."""
    target = root / path
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return SYMLINK, os.fsencode(os.readlink(target))
    if not stat.S_ISREG(info.st_mode):
        return "dir", b""
    mode = EXECUTABLE if info.st_mode & stat.S_IXUSR else FILE
    return mode, target.read_bytes()


def _blobs(repo: Path, shas: list[str], env: Mapping[str, str] | None) -> dict[str, bytes]:
    """The content of each blob in SHAS, in one `cat-file --batch`."""
    wanted = list(dict.fromkeys(shas))
    if not wanted:
        return {}
    query = "".join(f"{sha}\n" for sha in wanted).encode()
    output = git.run(["cat-file", "--batch"], repo, env=env, stdin=query).stdout
    found, position = {}, 0
    for sha in wanted:
        end = output.index(b"\n", position)
        header = output[position:end].split()
        position = end + 1
        if len(header) != 3:
            raise git.GitError(f"git cat-file: object {sha} is missing")
        size = int(header[2])
        found[sha] = output[position : position + size]
        position += size + 1
    return found


def _same_as_git_sees(repo: Path, paths: list[str], shas: list[str]) -> bool:
    """Whether git, with the install's clean filters, hashes PATHS to SHAS."""
    proc = git.run(
        ["hash-object", "--stdin-paths"], repo, stdin="\n".join(paths).encode(), check=False
    )
    return proc.returncode == 0 and proc.stdout.decode().split() == shas


def changes_between(
    repo: Path,
    old_tree: str,
    new_tree: str,
    paths: Iterable[str] = (),
    *,
    env: Mapping[str, str] | None = None,
) -> list[Change]:
    """What turning the work tree from OLD_TREE into NEW_TREE changes, path by path (limited
    to PATHS when given); the old side is read from disk and must be OLD_TREE's."""
    limit = ["--", *paths] if paths else []
    args = ["diff-tree", "-r", "-z", "--no-renames", old_tree, new_tree, *limit]
    fields = git.run(args, repo, env=env).stdout.split(b"\0")
    listed: list[tuple[str, str, str, str, str]] = []
    for header, name in zip(fields[0::2], fields[1::2], strict=False):
        if not header.startswith(b":"):
            continue
        old_mode, new_mode, old_sha, new_sha, _ = header[1:].decode().split(" ")
        if _GITLINK in (old_mode, new_mode):
            continue  # a submodule is not a file of this tree
        listed.append((name.decode(errors="surrogateescape"), old_mode, new_mode, old_sha, new_sha))
    news = _blobs(repo, [new for *_, new in listed if set(new) != {"0"}], env)
    changes, mismatched = [], []
    for path, old_mode, new_mode, old_sha, new_sha in listed:
        if (link := symlinked_folder(repo, path)) is not None:  # a write would land elsewhere
            raise git.GitError(f"{repo / path}: beyond the symbolic link {link}; nothing written")
        now = _on_disk(repo, path)
        gone = set(new_sha) == {"0"}
        if now == (None if gone else (new_mode, news[new_sha])):
            continue  # it holds the new state already (an ignored file the tree did not see)
        absent = set(old_sha) == {"0"}
        if absent and now is not None:
            raise git.GitError(f"{repo / path}: already exists in the work tree; nothing written")
        if not absent and (now is None or now[0] == "dir"):
            raise git.GitError(f"{repo / path}: missing from the work tree; nothing written")
        if now is not None and _blob_id(now[1], len(old_sha)) != old_sha:
            mismatched.append((path, old_sha))
        changes.append(
            Change(
                path,
                None if absent else old_mode,
                None if now is None else now[1],
                None if gone else new_mode,
                news.get(new_sha),
            )
        )
    if mismatched and not _same_as_git_sees(repo, *map(list, zip(*mismatched, strict=True))):
        raise git.GitError(
            f"{repo / mismatched[0][0]}: changed while patchkeeper worked; nothing written"
        )
    return changes


# ---------------------------------------------------------------- the journal


def _encode(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _decode(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def _save_journal(state_dir: Path, command: str, write_id: str, changes: list[Change]) -> None:
    entries = [
        {
            "path": c.path,
            "old_mode": c.old_mode,
            "old": _encode(c.old),
            "new_mode": c.new_mode,
            "new": _encode(c.new),
        }
        for c in changes
    ]
    document = {"id": write_id, "command": command, "pid": os.getpid(), "paths": entries}
    atomic_write(state_dir / JOURNAL_FILE, json.dumps(document).encode())


def _clear_journal(state_dir: Path) -> None:
    (state_dir / JOURNAL_FILE).unlink(missing_ok=True)
    sync_folder(state_dir)


def interrupted(state_dir: Path) -> str | None:
    """The command whose tree write was interrupted (its journal is there), or None."""
    path = state_dir / JOURNAL_FILE
    try:
        return str(json.loads(path.read_text(encoding="utf-8")).get("command", "?"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, AttributeError):
        return "?"


def interrupted_note(command: str) -> str:
    return (
        f"a write of `{command}` to the work tree was interrupted: some files may be its old "
        "version and some its new; run `patchkeeper recover`"
    )


# ---------------------------------------------------------------- writing one path


def _temp_name(write_id: str, number: int) -> str:
    return f".patchkeeper-{write_id}-{number}"


def _prune_empty(root: Path, folder: Path) -> None:
    """Remove FOLDER and its parents while empty, as git does when a file goes."""
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def _only_mode(change: Change) -> bool:
    """Same bytes, another executable bit: a chmod, which is atomic by itself."""
    return (
        change.old == change.new
        and change.old_mode not in (None, SYMLINK)
        and change.new_mode not in (None, SYMLINK)
    )


def _stage(root: Path, change: Change, temp: str) -> Path | None:
    """Write CHANGE's new content to the temporary file TEMP beside its path (not synced);
    None when no content is written (a deletion, a mode change)."""
    if change.new_mode is None or _only_mode(change):
        return None
    assert change.new is not None
    target = root / change.path
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = target.parent / temp
    with contextlib.suppress(FileNotFoundError):
        os.unlink(scratch)  # a leftover of an earlier, killed attempt
    try:
        if change.new_mode == SYMLINK:
            os.symlink(os.fsdecode(change.new), scratch)
            return scratch
        mode = 0o777 if change.new_mode == EXECUTABLE else 0o666
        fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
        try:
            view = memoryview(change.new)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(scratch)
        raise
    return scratch


def _commit(root: Path, change: Change, staged: Path | None) -> None:
    """Put CHANGE in place in one step: the rename of its staged file, an unlink, a chmod."""
    target = root / change.path
    if change.new_mode is None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(target)
        _prune_empty(root, target.parent)
    elif staged is None:
        os.chmod(target, (0o777 if change.new_mode == EXECUTABLE else 0o666) & ~_umask())
    else:
        os.replace(staged, target)


def _sync(paths: Iterable[Path]) -> None:
    """fsync each of PATHS (files or folders), side by side: the disk serves them together.
    The first failure is raised once all have ended."""
    paths = list(paths)
    failed: list[OSError] = []

    def sync(share: list[Path]) -> None:
        try:
            for path in share:
                sync_folder(path)
        except OSError as exc:
            failed.append(exc)

    shares = [paths[k::_SYNCERS] for k in range(min(_SYNCERS, len(paths)))]
    threads = [threading.Thread(target=sync, args=(share,)) for share in shares[1:]]
    for thread in threads:
        thread.start()
    if shares:
        sync(shares[0])
    for thread in threads:
        thread.join()
    if failed:
        raise failed[0]


_SYNCERS = 8  # threads that fsync at once


def _put(root: Path, change: Change, temp: str) -> None:
    """One path from its old state to its new one: staged, synced, put in place."""
    staged = _stage(root, change, temp)
    try:
        if staged is not None and not staged.is_symlink():
            sync_folder(staged)
        _commit(root, change, staged)
    except BaseException:
        if staged is not None:
            with contextlib.suppress(OSError):
                os.unlink(staged)
        raise


_UMASK: list[int] = []


def _umask() -> int:
    if not _UMASK:
        current = os.umask(0o022)
        os.umask(current)
        _UMASK.append(current)
    return _UMASK[0]


def _put_all(root: Path, changes: list[Change], write_id: str) -> None:
    """Write CHANGES: every new content to its temporary file first, all synced, and only then
    each put in place, deletions first (a file may give way to a folder, or the reverse). A
    failure before the first rename leaves the tree untouched; after, what was put in place
    is undone; either way it is raised, naming the path."""
    order = sorted(range(len(changes)), key=lambda k: (changes[k].new_mode is not None, k))
    staged: dict[int, Path] = {}
    later: set[int] = set()  # its folder is in the way of a file that goes first
    number = order[0]
    try:
        for number in order:
            try:
                if (
                    path := _stage(root, changes[number], _temp_name(write_id, number))
                ) is not None:
                    staged[number] = path
            except (NotADirectoryError, FileExistsError):
                later.add(number)
        _sync(path for path in staged.values() if not path.is_symlink())
    except OSError as exc:
        for path in staged.values():
            with contextlib.suppress(OSError):
                os.unlink(path)
        raise environment_problem(exc, root / changes[number].path, undone=True) from None
    done: list[int] = []
    try:
        for number in order:
            temp = _temp_name(write_id, number)
            if number in later:
                _put(root, changes[number], temp)
            else:
                _commit(root, changes[number], staged.pop(number, None))
            done.append(number)
            checkpoint(f"write.{len(done)}")  # tests: die like a power cut after K paths
    except OSError as exc:
        path = changes[number].path
        for left in staged.values():
            with contextlib.suppress(OSError):
                os.unlink(left)
        try:
            for undo in reversed(done):
                _put(root, changes[undo].reversed(), _temp_name(write_id, undo))
        except OSError:
            raise environment_problem(exc, root / path, undone=False) from None
        raise environment_problem(exc, root / path, undone=True) from None


def write_trees(
    root: Path,
    state_dir: Path,
    command: str,
    old_tree: str,
    new_tree: str,
    paths: Iterable[str] = (),
    *,
    env: Mapping[str, str] | None = None,
) -> list[str]:
    """Turn the work tree at ROOT from OLD_TREE into NEW_TREE (see the module docstring);
    ENV reads the trees (a scratch index's private objects). Returns the paths written."""
    changes = changes_between(root, old_tree, new_tree, paths, env=env)
    if not changes:
        return []
    write_id = os.urandom(6).hex()
    _save_journal(state_dir, command, write_id, changes)
    try:
        _put_all(root, changes, write_id)
    except EnvironmentProblem as problem:
        if problem.undone:
            _clear_journal(state_dir)
        raise
    _clear_journal(state_dir)
    return [change.path for change in changes]


# ---------------------------------------------------------------- after a kill


def _kept_ref(root: Path, write_id: str, changes: list[Change]) -> tuple[str | None, str]:
    """A commit on HEAD holding CHANGES' old content, under a ref `leftovers` lists, and the
    command that restores it."""
    head = git.rev_parse(root, "HEAD")
    if head is None:
        return None, ""
    from patchkeeper.install.scratch import scratch_index

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
    path = state_dir / JOURNAL_FILE
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        write_id, command = str(document["id"]), str(document["command"])
        changes = [
            Change(e["path"], e["old_mode"], _decode(e["old"]), e["new_mode"], _decode(e["new"]))
            for e in document["paths"]
        ]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EnvironmentProblem(
            f"{path}: the journal of an interrupted write is unreadable ({exc}); look at the "
            "files it names, then remove it",
            undone=False,
        ) from None
    settled = Settled(command)
    kept: list[Change] = []
    for number, change in reversed(list(enumerate(changes))):
        folder = (root / change.path).parent
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            os.unlink(folder / _temp_name(write_id, number))
        now = _on_disk(root, change.path)
        new = None if change.new_mode is None else (change.new_mode, change.new)
        old = None if change.old_mode is None else (change.old_mode, change.old)
        if now == old:
            continue
        if now == new:
            try:
                _put(root, change.reversed(), _temp_name(write_id, number))
            except OSError as exc:
                raise environment_problem(exc, root / change.path, undone=False) from None
            settled.undone.append(change.path)
        else:
            kept.append(change)
    if kept:
        settled.kept = sorted(c.path for c in kept)
        settled.kept_ref, settled.restore = _kept_ref(root, write_id, kept)
    _clear_journal(state_dir)
    settled.undone.sort()
    return settled


def write_merge(
    install: Install,
    preview: MergePreview,
    *,
    markers: bool = False,
    command: str = "leftovers restore",
) -> list[str]:
    """Write the merged content of every non-conflicting path (worktree_writer.py: each file
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
