"""What a ref's committed content holds, read without a checkout.

Blobs by one `git cat-file --batch` (`read_blobs`), the `Upstream-Has:` conditions judged on
them (`upstream_has_content(s)`), and whether a ref holds a variant's every change already
(`present_in_ref`): the facts a classification is given before any patch is tried.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from patchkeeper.install.plumbing import git
from patchkeeper.install.plumbing.scratch_index import scratch_index
from patchkeeper.patchset.model import PatchFile
from patchkeeper.patchset.userfiles import read_user_file

_TREE_FILE_MAX = 64 << 20  # a source file an Upstream-Has condition reads from the work tree
_BATCH_HEADER_RE = re.compile(rb"^[0-9a-f]{40,64} (\w+) (\d+)$")  # else "NAME missing"


def present_in_ref(repo: Path, ref: str, variant: PatchFile) -> bool:
    """Whether REF's committed content already holds every change of VARIANT."""
    with scratch_index(repo, private_objects=True) as index:
        index.load_ref(ref, variant.files)
        return index.apply(variant.diff, "--check", "--reverse").returncode == 0


def upstream_has_content(repo: Path, ref: str, variants: Iterable[PatchFile]) -> dict[Path, str]:
    """Which VARIANTS' `Upstream-Has:` conditions all hold in REF's committed blobs.

    Maps each such variant's path to the conditions, for the report. Every blob is read by
    one `git cat-file --batch` (no checkout, no process per condition), and none at all when
    no variant has conditions. A missing file, or a folder, holds no text.
    """
    return upstream_has_contents(repo, [ref], variants)[ref]


def upstream_has_in_worktree(
    repo: Path, ref: str, variants: Iterable[PatchFile]
) -> dict[Path, str]:
    """`upstream_has_content` for a work tree on REF (its HEAD): the conditions must hold in
    REF's blobs, which speak for upstream (the work tree carries our own patches), and in the
    work tree's files, which are what runs: a file an updater deleted or emptied holds no
    text, whatever HEAD still has (a regular file only, read within a bound)."""
    variants = list(variants)
    has = upstream_has_content(repo, ref, variants)
    texts: dict[str, bytes] = {}

    def in_tree(path: str) -> bytes:
        if path not in texts:
            target = repo / path
            plain = target.is_file() and not target.is_symlink()
            data, unreadable = read_user_file(target, _TREE_FILE_MAX) if plain else (b"", "")
            texts[path] = b"" if unreadable is not None else data
        return texts[path]

    return {
        variant.path: why
        for variant in variants
        if (why := has.get(variant.path)) is not None
        and all(c.found_in(in_tree(c.path)) for c in variant.upstream_has)
    }


def upstream_has_contents(
    repo: Path, refs: Sequence[str], variants: Iterable[PatchFile]
) -> dict[str, dict[Path, str]]:
    """`upstream_has_content` for each of REFS, still with one git process."""
    judged = [variant for variant in variants if variant.upstream_has]
    paths = sorted({c.path for variant in judged for c in variant.upstream_has})
    blobs = read_blobs(repo, [(ref, path) for ref in refs for path in paths]) if paths else {}
    return {
        ref: {
            variant.path: variant.upstream_has_reason
            for variant in judged
            if all(c.found_in(blobs.get((ref, c.path), b"")) for c in variant.upstream_has)
        }
        for ref in refs
    }


def read_blobs(repo: Path, wanted: Sequence[tuple[str, str]]) -> dict[tuple[str, str], bytes]:
    """The blob at each (REF, PATH) of WANTED (pairs that are no blob are left out), read by
    one `git cat-file --batch` process."""
    if not wanted:
        return {}
    query = "".join(f"{ref}:{path}\n" for ref, path in wanted).encode(errors="surrogateescape")
    output = git.run(["cat-file", "--batch"], repo, stdin=query).stdout
    blobs: dict[tuple[str, str], bytes] = {}
    position = 0
    for pair in wanted:
        line, position = git.batch_record(output, position, repo)
        header = _BATCH_HEADER_RE.match(line)
        if header is None:
            continue  # no such file in REF
        size = int(header[2])
        content = git.batch_content(output, position, size, repo)
        if header[1] == b"blob":
            blobs[pair] = content
        position += size + 1  # the content, then a newline
    return blobs
