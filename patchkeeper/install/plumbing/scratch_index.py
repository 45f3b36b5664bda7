"""A temporary git index holding only the paths a patch set touches.

Every question ("does this patch apply here?") is answered with `git apply --cached` against
this index: no checkout, no change to the install's own index or work tree. Loading a ref costs
one `ls-tree` and one `update-index`, whatever the size of the repository.

With `private_objects`, every object the scratch work writes (blobs `git apply` makes, trees
`write-tree` makes, work tree content hashed in) goes into a temporary object directory that
has the install's own store as an alternate (`GIT_OBJECT_DIRECTORY`,
`GIT_ALTERNATE_OBJECT_DIRECTORIES`): the install's `.git/objects` is left exactly as it was,
which a read-only command (`check`, `status`) owes its user. The objects live as long as the
ScratchIndex (or whoever holds its `IndexFolder` folder), so diffs between its trees can still be
taken after the work is done. Being thrown away, they are written uncompressed: zlib was about
a third of a writing `git apply` on big files (`core.looseCompression=0`; the ids are the same).
"""

from __future__ import annotations

import itertools
import os
import signal
import stat
import subprocess
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from patchkeeper.install.plumbing import git
from patchkeeper.install.plumbing.loose_objects import written_blobs
from patchkeeper.install.plumbing.mode_check import mode_refusal
from patchkeeper.install.system.temp_folders import (
    new_folder,
    remove_folder,
    remove_in_background,
)


class IndexFolder:
    """A temporary folder for one scratch index (and its private objects); removed by
    `close`, or when nothing refers to it any more (system/temp_folders.py: a folder that cannot be
    removed is one warning line, never a traceback)."""

    def __init__(self) -> None:
        self.path = new_folder("patchkeeper-")
        self._remove = weakref.finalize(self, remove_folder, self.path)

    def close(self) -> None:
        self._remove()

    def close_later(self) -> None:
        """Remove the folder while the command goes on (`remove_in_background`)."""
        if self._remove.detach() is not None:
            remove_in_background(self.path)


def object_store(repo: Path) -> Path:
    """REPO's object directory (`.git/objects`, or wherever git says it is)."""
    if "GIT_OBJECT_DIRECTORY" not in os.environ and (repo / ".git" / "objects").is_dir():
        return (repo / ".git" / "objects").resolve()
    where = git.out(["rev-parse", "--git-path", "objects"], repo)
    return (repo / where).resolve()


GIT_CANNOT_READ = 128  # git's exit status when it cannot read its input
Completed = subprocess.CompletedProcess[bytes]


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class ScratchIndex:
    def __init__(self, repo: Path, index_file: Path, *, objects: Path | None = None) -> None:
        self.repo = repo
        self.index_file = index_file
        self.env = {"GIT_INDEX_FILE": str(index_file)}
        self.objects = objects  # where git writes what it makes (None: the install's store)
        if objects is not None:
            objects.mkdir(parents=True, exist_ok=True)
            alternates = [str(object_store(repo))]
            if inherited := os.environ.get("GIT_ALTERNATE_OBJECT_DIRECTORIES"):
                alternates.append(inherited)
            self.env["GIT_OBJECT_DIRECTORY"] = str(objects)
            self.env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = os.pathsep.join(alternates)
        self._tree: str | None = None  # the tree of the index as it is now, once written
        self.id_bytes = 0  # how long its blob ids are (index_file.py), once entries are added

    def _git(self, args: list[str], stdin: bytes | None = None, check: bool = True):
        faster = ["-c", "core.looseCompression=0"] if self.objects else []  # objects thrown away
        return git.run([*faster, *args], self.repo, env=self.env, stdin=stdin, check=check)

    def _changed(self) -> None:
        self._tree = None

    def clear(self) -> None:
        """Make the index empty (no process: an index file that is not there is empty)."""
        self._changed()
        self.index_file.unlink(missing_ok=True)

    def listing(self, ref: str, paths: Iterable[str]) -> bytes:
        """`git ls-tree -r -z REF -- PATHS`: the entries an index would hold for them."""
        return self._git(["ls-tree", "-r", "-z", ref, "--", *sorted(set(paths))]).stdout

    def add_entries(self, listing: bytes) -> None:
        """Add `ls-tree -z` (or `--index-info`) entries to the index."""
        if listing:
            self._changed()
            self._git(["update-index", "-z", "--index-info"], stdin=listing)
            head = listing.split(b"\t", 1)[0].split(b" ")
            self.id_bytes = next((len(t) // 2 for t in head if len(t) in (40, 64)), 0)

    def set_executable(self, paths: Iterable[str], executable: bool) -> None:
        """Set or clear the executable bit of PATHS' entries; their blobs stay."""
        if chosen := sorted(set(paths)):
            self._changed()
            self._git(["update-index", f"--chmod={'+' if executable else '-'}x", "--", *chosen])

    def load_ref(self, ref: str, paths: Iterable[str], *, overlay: bool = False) -> bytes:
        """Index REF's content of PATHS; with OVERLAY, on top of what the index holds.
        Returns the entries loaded (`ls-tree -z` format)."""
        if not overlay:
            self.clear()
        entries = self.listing(ref, paths)
        self.add_entries(entries)
        return entries

    def load_worktree(self, paths: Iterable[str]) -> None:
        """Index the work tree's current content of PATHS (absent files stay absent)."""
        self.clear()
        present = [p for p in sorted(set(paths)) if (self.repo / p).is_file()]
        if not present:
            return
        # Raw bytes (no clean filters): the combined diff is applied to these very bytes.
        shas = self._git(
            ["hash-object", "-w", "--no-filters", "--stdin-paths"],
            stdin="\n".join(present).encode(errors="surrogateescape"),
        )
        entries = []
        for path, sha in zip(present, shas.stdout.decode().split(), strict=True):
            executable = os.stat(self.repo / path).st_mode & stat.S_IXUSR
            entries.append(f"{'100755' if executable else '100644'} {sha}\t{path}\0")
        self.add_entries("".join(entries).encode(errors="surrogateescape"))

    def read_file(self, path: str) -> bytes | None:
        """The content this index holds for PATH, or None when it holds none."""
        proc = self._git(["cat-file", "blob", f":{path}"], check=False)
        return proc.stdout if proc.returncode == 0 else None

    def read_files(self, paths: list[str]) -> dict[str, bytes]:
        """The content this index holds for each of PATHS (those it holds), in one process at
        most; none for the blobs git wrote into the private objects (`written_blobs`)."""
        found = written_blobs(self.objects, self.index_file, self.id_bytes, paths)
        found.update(_read_by_git(self, [path for path in paths if path not in found]))
        return {path: found[path] for path in paths if path in found}

    def read_blobs(self, names: list[str], missing: set[str] | None = None) -> dict[str, bytes]:
        """The content of each of NAMES (a blob id, or `:PATH` of this index; no newline in
        any) that names a blob here, in one `cat-file --batch`; no object's names: MISSING."""
        query = "".join(f"{name}\n" for name in names).encode(errors="surrogateescape")
        output = self._git(["cat-file", "--batch"], stdin=query).stdout
        return git.batch_blobs(output, names, self.repo, set() if missing is None else missing)

    def write_tree(self) -> str:
        if self._tree is None:
            self._tree = self._git(["write-tree"]).stdout.decode().strip()
        return self._tree

    def read_tree(self, tree: str) -> None:
        self._git(["read-tree", tree])
        self._tree = tree

    def save(self) -> tuple[bytes | None, str | None]:
        """The index as it is now, to go back to with `restore` (a file copy, no process)."""
        try:
            return self.index_file.read_bytes(), self._tree
        except FileNotFoundError:
            return None, self._tree

    def restore(self, saved: tuple[bytes | None, str | None]) -> None:
        data, self._tree = saved
        if data is None:
            self.index_file.unlink(missing_ok=True)
        else:
            self.index_file.write_bytes(data)

    def apply(self, diff: bytes, *flags: str) -> subprocess.CompletedProcess[bytes]:
        """`git apply --cached -v FLAGS` on this index; the caller reads the exit code.

        git apply is atomic: when it fails, the index is as it was. A mode change whose
        starting mode the index does not hold fails as git's own refusals do (see
        `mode_check.mode_refusal`).
        """
        reverse = "--reverse" in flags or "-R" in flags
        if (refused := mode_refusal(self.repo, self.env, diff, reverse=reverse)) is not None:
            return refused
        proc = self._git(["apply", "--cached", "-v", *flags], stdin=diff, check=False)
        if proc.returncode < 0:
            proc = self._crashed(proc)
        if "--check" not in flags:
            self._changed()
        return proc

    def _crashed(self, proc: Completed) -> Completed:
        """git died of a signal on this input (git 2.39 aborts on some malformed headers):
        its lock on the scratch index is taken away, and the answer reads as git's own
        "cannot read the patch" (exit 128), so the patch is `invalid`, never a crash of ours."""
        Path(f"{self.index_file}.lock").unlink(missing_ok=True)
        signal_name = _signal_name(-proc.returncode)
        said = f"error: git apply died of {signal_name} on this patch\n".encode()
        return Completed(proc.args, GIT_CANNOT_READ, proc.stdout, proc.stderr + said)

    def same_as(self, tree: str, paths: Iterable[str]) -> bool:
        """Whether this index holds exactly TREE's entries for PATHS (present or absent)."""
        args = ["diff-index", "--cached", "--quiet", "--no-renames", tree, "--", *paths]
        return self._git(args, check=False).returncode == 0

    def diff(self, old: str, new: str, paths: Iterable[str] = ()) -> bytes:
        """The exact diff between two trees this index wrote (see `tree_diff`), no renames."""
        limit = ["--", *paths] if paths else []
        args = ["diff", "--binary", "--full-index", "--no-renames", old, new, *limit]
        return self._git(args).stdout


def _read_by_git(index: ScratchIndex, paths: list[str]) -> dict[str, bytes]:
    """The content INDEX holds for each of PATHS (those it holds), in one process."""
    if len(paths) < 2 or any("\n" in path for path in paths):
        return {p: data for p in paths if (data := index.read_file(p)) is not None}
    found = index.read_blobs([f":{path}" for path in paths])
    return {path: found[f":{path}"] for path in paths if f":{path}" in found}


def index_entries(index: ScratchIndex) -> dict[str, tuple[str, str]]:
    """Every entry of INDEX: path -> (mode, blob id), one `ls-files -s`."""
    found: dict[str, tuple[str, str]] = {}
    listing = git.run(["ls-files", "-s", "-z"], index.repo, env=index.env).stdout
    for record in listing.split(b"\0"):
        if record:
            info, _, name = record.partition(b"\t")
            mode, sha, _ = info.decode().split(" ")
            found[name.decode(errors="surrogateescape")] = (mode, sha)
    return found


@contextmanager
def scratch_index(repo: Path, *, private_objects: bool = False) -> Iterator[ScratchIndex]:
    """A scratch index for REPO; with PRIVATE_OBJECTS, nothing it writes reaches REPO's
    object store (see the module docstring)."""
    scratch = IndexFolder()
    try:
        yield open_scratch(repo, scratch, private_objects=private_objects)
    finally:
        scratch.close()


def open_scratch(repo: Path, scratch: IndexFolder, *, private_objects: bool) -> ScratchIndex:
    """A scratch index in SCRATCH's folder (which the caller keeps and closes)."""
    objects = scratch.path / "objects" if private_objects else None
    return ScratchIndex(repo, scratch.path / "index", objects=objects)


def ref_paths_tree(repo: Path, ref: str, paths: Iterable[str]) -> str:
    """A tree of REF's content of PATHS only (written to REPO's object store)."""
    with scratch_index(repo) as index:
        index.load_ref(ref, paths)
        return index.write_tree()


def worktree_paths_tree(repo: Path, paths: Iterable[str]) -> str:
    """A tree of the work tree's content of PATHS only, as `git add` takes it (clean filters,
    modes, symlinks; ignored files too: they were named), written to REPO's object store.
    Only those paths are read: no whole-tree scan."""
    present = sorted({p for p in paths if os.path.lexists(repo / p)})
    with scratch_index(repo) as index:
        if present:
            env = {**index.env, "GIT_LITERAL_PATHSPECS": "1"}
            git.run(
                ["add", "--force", "--pathspec-from-file=-", "--pathspec-file-nul"],
                repo,
                env=env,
                stdin="\0".join(present).encode(errors="surrogateescape"),
            )
        return index.write_tree()


def plain_index(index_file: Path) -> bool:
    """Whether INDEX_FILE is a version 2 index, whose entries cannot carry extended flags
    (intent-to-add, skip-worktree): one whose tree is HEAD's is then all `git reset` makes
    of it, stat data aside."""
    try:
        with open(index_file, "rb") as handle:
            header = handle.read(8)
    except OSError:
        return False
    return header[:4] == b"DIRC" and int.from_bytes(header[4:8], "big") == 2


def tree_diff(repo: Path, old: str, new: str, paths: Iterable[str] = ()) -> bytes:
    """The exact diff between two (partial) trees, with full blob ids for later 3-way use;
    limited to PATHS when given."""
    limit = ["--", *paths] if paths else []
    return git.run(["diff", "--binary", "--full-index", old, new, *limit], repo).stdout


def _under(path: str, paths: set[str]) -> bool:
    """Whether a pathspec of PATHS (as `ls-tree` takes them: literal, a folder names all it
    holds) matches PATH."""
    if path in paths:
        return True
    cut = path.rfind("/")
    while cut > 0:
        if path[:cut] in paths:
            return True
        cut = path.rfind("/", 0, cut)
    return False


class TreeListings:
    """`git ls-tree -r -z TREE -- PATHS` for many trees, by difference.

    The first tree is listed once; every other tree's entries are the one before it changed
    by what `git diff-tree` says differs between the two, all pairs in one process (a diff
    of two trees skips the folders they share, so it costs what changed, not the size of the
    repository or the number of paths). A tree that came before costs nothing.
    """

    def __init__(self, repo: Path, paths: Iterable[str], trees: Iterable[str]) -> None:
        self.paths = set(paths)
        self._entries: dict[str, dict[str, bytes]] = {}
        order = list(dict.fromkeys(trees))
        if not order or not self.paths:
            self._entries = {tree: {} for tree in order}
            return
        first = git.run(["ls-tree", "-r", "-z", order[0], "--", *sorted(self.paths)], repo)
        current: dict[str, bytes] = {}
        for entry in first.stdout.split(b"\0"):
            if entry:
                current[entry.split(b"\t", 1)[1].decode(errors="surrogateescape")] = entry + b"\0"
        self._entries[order[0]] = current
        if len(order) == 1:
            return
        pairs = "".join(f"{old} {new}\n" for old, new in itertools.pairwise(order))
        args = ["diff-tree", "-r", "-z", "--no-renames", "--stdin"]
        output = git.run(args, repo, stdin=pairs.encode()).stdout
        changes = self._changes(output)
        for old, new in itertools.pairwise(order):
            current = dict(current)
            for path, entry in changes.get((old, new), ()):
                if entry is None:
                    current.pop(path, None)
                else:
                    current[path] = entry
            self._entries[new] = current

    def _changes(self, output: bytes) -> dict[tuple[str, str], list[tuple[str, bytes | None]]]:
        """`diff-tree -z --stdin` output -> per pair of trees, (path, its new entry or None
        when it is gone) for each changed path the pathspec matches."""
        changes: dict[tuple[str, str], list[tuple[str, bytes | None]]] = {}
        tokens = iter(output.split(b"\0"))
        pair: list[tuple[str, bytes | None]] = []
        for token in tokens:
            if not token:
                continue
            if not token.startswith(b":"):  # "OLD NEW\n": the pair the changes after it are of
                header, _, token = token.partition(b"\n")
                old, new = header.decode().split()
                pair = changes.setdefault((old, new), [])
                if not token:
                    continue
            raw_path = next(tokens)
            path = raw_path.decode(errors="surrogateescape")
            if not _under(path, self.paths):
                continue
            _, mode, _, sha, status = token[1:].split(b" ")
            if status == b"D":
                pair.append((path, None))
            else:
                kind = b"commit" if mode == b"160000" else b"blob"
                pair.append((path, b"%s %s %s\t%s\0" % (mode, kind, sha, raw_path)))
        return changes

    def listing(self, tree: str, paths: Iterable[str]) -> bytes:
        """TREE's entries of PATHS (a subset of those given at the start), `ls-tree -z` form."""
        wanted = set(paths)
        entries = self._entries[tree]
        return b"".join(entries[path] for path in sorted(entries) if _under(path, wanted))
