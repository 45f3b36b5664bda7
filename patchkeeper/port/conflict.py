"""A patch that conflicts on the release: its files laid out for a person to fix, and the fix
read back.

The folder (`.git/patchkeeper/port/worktree/`) holds the patch's files as REF plus the patches
ported before it has them, each with the patch applied where it applies. Where it does not,
the file holds diff3 conflict markers (`git merge-file --diff3`): REF's lines, the lines the
patch was written against, and the patch's own, so its intent shows beside what upstream did.
The last two come from a commit the patch applies to: the install's HEAD (the release it runs
now), else the patch's `Base`. When neither has it, each hunk that finds no place is put at
the end of its file as a conflict block of what it expected and what it writes.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from patchkeeper.engine.diffs import split_hunks
from patchkeeper.install.plumbing import git
from patchkeeper.install.plumbing.scratch_index import ScratchIndex, scratch_index
from patchkeeper.model.errors import UserError
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.model import PatchFile

MARKERS = (b"<<<<<<< ", b"||||||| ", b">>>>>>> ")


@dataclass(frozen=True)
class LaidOut:
    """The conflict's files in the folder: which hold markers, and where the middle came from."""

    files: list[str]
    marked: list[str]
    source: str


def _sections(variant: PatchFile) -> dict[str, bytes]:
    return {path: header + b"".join(hunks) for path, header, hunks in split_hunks(variant.diff)}


def _preimages(repo: Path, variant: PatchFile, commits: list[str]) -> tuple[str, dict, dict]:
    """(which commit, its content of the patch's files, that content with the patch applied)
    for the first of COMMITS the whole patch applies to; ("", {}, {}) when none does."""
    for commit in commits:
        if git.rev_parse(repo, commit) is None:
            continue
        with scratch_index(repo, private_objects=True) as index:
            index.load_ref(commit, variant.files)
            before = index.read_files(list(variant.files))
            if index.apply(variant.diff).returncode != 0:
                continue
            return commit, before, index.read_files(list(variant.files))
    return "", {}, {}


def _merge_file(ours: bytes, base: bytes, theirs: bytes, labels: list[str]) -> tuple[bytes, bool]:
    """`git merge-file -p --diff3` of the three texts: (the result, whether it conflicts)."""
    folder = Path(os.path.realpath(os.environ.get("TMPDIR", "/tmp")))
    names = []
    try:
        for text in (ours, base, theirs):
            path = folder / f"patchkeeper-port-{os.getpid()}-{len(names)}"
            path.write_bytes(text)
            names.append(str(path))
        args = ["merge-file", "-p", "--diff3"]
        for label in labels:
            args += ["-L", label]
        proc = git.run([*args, *names], folder, check=False)
    finally:
        for name in names:
            Path(name).unlink(missing_ok=True)
    if proc.returncode < 0:
        raise UserError(f"git merge-file failed ({proc.stderr.decode(errors='replace').strip()})")
    return proc.stdout, proc.returncode > 0


def _blocks(section: bytes, failed: set[int] | None, name: str) -> bytes:
    """Each failed hunk of SECTION (None: all) as a diff3 conflict block: nothing on REF's
    side, what it expected, what it writes."""
    out = b""
    for number, hunk in enumerate(split_hunks(section)[0][2] if section else [], start=1):
        if failed is not None and number not in failed:
            continue
        lines = hunk.splitlines(keepends=True)
        expected = b"".join(line[1:] for line in lines[1:] if line[:1] in (b" ", b"-"))
        writes = b"".join(line[1:] for line in lines[1:] if line[:1] in (b" ", b"+"))
        header = lines[0].decode(errors="replace").strip()
        out += (
            f"<<<<<<< REF: hunk #{number} of {name} ({header}) found no place here\n".encode()
            + f"||||||| what {name} expected\n".encode()
            + expected
            + b"=======\n"
            + writes
            + f">>>>>>> {name}\n".encode()
        )
    return out


def lay_out(
    repo: Path,
    folder: Path,
    base_tree: str,
    variant: PatchFile,
    result: PatchResult,
    ref: str,
    head: str | None,
) -> LaidOut:
    """Write the patch's files into FOLDER (made anew) as described in the module docstring."""
    name = result.name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    sections = _sections(variant)
    commits = [c for c in (head, variant.base) if c]
    source, pre, post = _preimages(repo, variant, commits)
    failed: dict[str, set[int] | None] = {}
    for hunk in result.conflicts:
        if hunk.hunk == 0:
            failed[hunk.file] = None
        elif failed.get(hunk.file, set()) is not None:
            failed.setdefault(hunk.file, set()).add(hunk.hunk)
    marked = []
    with scratch_index(repo, private_objects=True) as index:
        index.load_ref(base_tree, variant.files)
        current = index.read_files(list(variant.files))
        for path in variant.files:
            section = sections.get(path, b"")
            alone = _applied_alone(index, path, section)
            if alone is not _FAILED:
                text = alone if isinstance(alone, bytes) else None
            elif source:
                labels = [f"{ref} (upstream)", f"{source[:12]} (before {name})", name]
                text, conflicts = _merge_file(
                    current.get(path, b""), pre.get(path, b""), post.get(path, b""), labels
                )
                marked += [path] if conflicts else []
            else:
                text = current.get(path, b"") + _blocks(section, failed.get(path), name)
                marked.append(path)
            if text is None:
                continue  # the patch deletes it, and may
            target = folder / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(text)
    where = f"the patch as it applies to {source[:12]}" if source else "the hunks' own lines"
    return LaidOut(list(variant.files), marked, where)


_FAILED = object()


def _applied_alone(index: ScratchIndex, path: str, section: bytes) -> bytes | object | None:
    """PATH's text with the patch's part for it applied alone (None: the part deletes it),
    or _FAILED when it does not apply; the index is left as it was."""
    saved = index.save()
    try:
        if not section or index.apply(section).returncode != 0:
            return _FAILED
        return index.read_file(path)
    finally:
        index.restore(saved)


def has_markers(text: bytes) -> bool:
    return any(line.startswith(MARKERS) for line in text.splitlines())


def read_resolved(repo: Path, folder: Path, base_tree: str, files: list[str]) -> tuple[str, bytes]:
    """The tree of BASE_TREE with FILES as FOLDER holds them (a file not there: deleted), and
    the diff from BASE_TREE to it; refused while a file still holds conflict markers."""
    if not folder.is_dir():
        raise UserError(
            f"{folder}: the conflict's files are gone; run patchkeeper port --abort, then port "
            "again"
        )
    still = []
    contents: dict[str, bytes | None] = {}
    for path in files:
        target = folder / path
        contents[path] = target.read_bytes() if target.is_file() else None
        if (text := contents[path]) is not None and has_markers(text):
            still.append(path)
    if still:
        raise UserError(
            f"{folder / still[0]}: conflict markers remain (in {', '.join(still)}); resolve "
            "them, then run patchkeeper port --continue"
        )
    with scratch_index(repo) as index:
        index.read_tree(base_tree)
        entries = []
        for path, text in contents.items():
            if text is None:
                git.run(["update-index", "--force-remove", "--", path], repo, env=index.env)
                continue
            sha = git.out(["hash-object", "-w", "--stdin"], repo, stdin=text)
            mode = "100755" if os.access(folder / path, os.X_OK) else "100644"
            entries.append(f"{mode} {sha}\t{path}\0")
        index.add_entries("".join(entries).encode(errors="surrogateescape"))
        tree = index.write_tree()
        diff = index.diff(base_tree, tree, files)
    return tree, diff
