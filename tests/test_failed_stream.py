"""A failed batch read patch by patch (engine/failed_stream.py) answers what one by one does.

Random series on a few shared files, each patch made on the result of the ones before (as a
format-patch series is, index lines and all), some on two files, some creating a file; then
an upstream release that rewords some of their lines, takes some fixes, moves some blocks and
creates a file a patch creates. Every ref is classified batched and one by one, and the
results must be equal field by field. Seeds are fixed: the same series every run (each
reaches conflicts, and together they reach merged-3way, upstream-has-it, applied-offset and
a failed stream read per patch many times over). A guard of the rounds' reasoning: it passes
on the code before them too, as an equivalence must.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.helpers import commit_files, diff_of, git, make_repo, patch_text, write_patch_set
from tests.test_batch import checked

FILES = ("a.c", "b.c", "c.c")


def _lines(name: str) -> list[str]:
    return [f"{name} line {n}" for n in range(60)]


def _series(tmp_path: Path, seed: int) -> tuple[Path, Path, list[str]]:
    rng = random.Random(seed)
    current = {name: _lines(name) for name in FILES}
    repo = make_repo(tmp_path / "up", {n: "\n".join(v) + "\n" for n, v in current.items()},
                     tag="v1.0.0")  # fmt: skip
    patches: dict[str, str] = {}
    for number in range(14):
        edits: dict[str, str] = {}
        for name in rng.sample(FILES, rng.choice((1, 1, 2))):
            lines = current[name]
            at = rng.randrange(2, len(lines) - 2)
            if rng.random() < 0.5:
                lines[at] = f"{lines[at]} fixed by {number}"
            else:
                lines.insert(at, f"added by {number}")
            edits[name] = "\n".join(lines) + "\n"
        if rng.random() < 0.15:
            edits[f"new{number % 3}.c"] = f"created by {number}\n"
        diff = diff_of(repo, edits)
        commit_files(repo, edits, f"patch {number}")  # the next patch's preimage
        patches[f"p{number:02d}.patch"] = patch_text(diff)
    # The release: from v1.0.0, upstream rewords lines, takes some fixes, moves some blocks.
    released = {name: _lines(name) for name in FILES}
    for name in FILES:
        for _ in range(3):
            at = rng.randrange(len(released[name]))
            released[name][at] = f"{released[name][at]} upstream"
        if rng.random() < 0.5:
            released[name][0:0] = [f"{name} moved {n}" for n in range(4)]
    taken = rng.sample(sorted(current), 1)[0]
    released[taken] = list(current[taken])  # upstream took every fix of one file
    files = {name: "\n".join(lines) + "\n" for name, lines in released.items()}
    files["new1.c"] = "upstream made it\n"
    git(repo, "checkout", "-q", "v1.0.0")
    commit_files(repo, files, "release", tag="v2.0.0")
    return repo, write_patch_set(tmp_path / "ps", patches), ["v1.0.0", "v2.0.0"]


@pytest.mark.parametrize("seed", range(6))
def test_a_failed_stream_read_per_patch_equals_one_by_one(tmp_path: Path, seed: int) -> None:
    repo, patches, refs = _series(tmp_path, seed)
    one_by_one = checked(repo, patches, refs, reuse=False, batch=False)
    assert {r["outcome"] for r in one_by_one[1]} & {"conflict"}, one_by_one[1]
    assert checked(repo, patches, refs, reuse=False, batch=True) == one_by_one
