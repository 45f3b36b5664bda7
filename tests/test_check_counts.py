"""A small `check` (issue 30) costs what it must and no more, in counts, never in seconds:
the modules a plain check of one ref loads, and the git processes it starts."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.helpers import (
    GIT_ID,
    commit_files,
    diff_of,
    make_repo,
    modules_loaded,
    patch_text,
    write_patch_set,
)

LINES = "".join(f"line {n}\n" for n in range(1, 41))

# Loaded by a rare path only: a variant chosen by content, an `Upstream-Has:` condition, a
# patch that cannot go in a batch, the work tree's records, a write of patchkeeper's state.
RARE = {
    "patchkeeper.engine.by_content",
    "patchkeeper.model.content_choice",
    "patchkeeper.engine.one_patch",
    "patchkeeper.model.nextstep",
    "patchkeeper.patchset.conditions",
    "patchkeeper.engine.recorded",
    "patchkeeper.install.system.durable",
    "patchkeeper.install.system.liveness",
    "patchkeeper.patchset.plaindiff",
    "patchkeeper.engine.doubts",  # a merge refused, an offset that does not stand
    "unidiff",  # a diff in the plainest shape is read by patchset/diffsections.py
}




def ten_patches_one_moved(tmp_path: Path) -> tuple[Path, Path]:
    """Ten patches on ten files; the release puts two lines at the top of the fifth file,
    so its patch applies 2 lines further on and every other in place."""
    files = {f"f{n}.py": LINES.replace("line", f"f{n}") for n in range(10)}
    repo = make_repo(tmp_path / "up", files, tag="v1.0.0")
    patches = {
        f"fix{n}.patch": patch_text(
            diff_of(repo, {f"f{n}.py": files[f"f{n}.py"].replace(f"f{n} 20\n", f"f{n} 20 ok\n")})
        )
        for n in range(10)
    }
    commit_files(repo, {"f4.py": "new 1\nnew 2\n" + files["f4.py"]}, "release", tag="v1.1.0")
    return repo, write_patch_set(tmp_path / "patches", patches)


# Loaded by a patch that is tried alone, moved or failed: not where every batch applies.
NOT_ALL_APPLIED = {
    "patchkeeper.engine.judge",
    "patchkeeper.engine.failed_stream",
    "patchkeeper.engine.conflicts",
    "patchkeeper.engine.could_apply",
    "patchkeeper.model.conflict_details",
}


def test_a_plain_check_loads_no_rare_path(tmp_path: Path) -> None:
    repo, patches = ten_patches_one_moved(tmp_path)
    modules = modules_loaded(
        "check", "--ref", "v1.1.0", "--install", str(repo), "--patches", str(patches),
        new_only=False,
    )  # fmt: skip
    assert "patchkeeper.engine.checking" in modules  # it did check
    assert not RARE & modules, sorted(RARE & modules)
    every = modules_loaded(
        "check", "--ref", "v1.0.0", "--install", str(repo), "--patches", str(patches)
    )
    assert "patchkeeper.engine.checking" in every
    assert not (RARE | NOT_ALL_APPLIED) & every, sorted((RARE | NOT_ALL_APPLIED) & every)
    # No patchkeeper.toml in this set: nothing reads TOML, and git diffs carry no timestamps.
    assert not {"tomllib", "datetime"} & modules


def test_check_of_ten_patches_one_at_an_offset_starts_eight_git_processes(tmp_path: Path) -> None:
    """Open the install, the ref's version, the ref, its listing, the scratch index (5); one
    check of the stream of all ten (a read-only check writes nothing: `--check`); the moved
    one applied alone on its files, where the stream would have put it, and guarded there:
    its file before and after in one read (its reverse check is ruled out by the content,
    could_apply.py), never applied again with the others."""
    repo, patches = ten_patches_one_moved(tmp_path)
    trace = tmp_path / "trace"
    proc = subprocess.run(
        [sys.executable, "-m", "patchkeeper", "check", "--json", "--install", str(repo),
         "--patches", str(patches), "--ref", "v1.1.0"],
        capture_output=True, text=True, check=False,
        env={**os.environ, **GIT_ID, "GIT_TRACE": str(trace)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"outcome": "applied-offset"' in proc.stdout
    started = re.findall(r"trace: built-in: git (\S+ \S+)", trace.read_text())
    assert started.count("apply --cached") == 2, started  # the stream, the moved one
    assert started.count("cat-file --batch") == 1, started  # after, before: one process
    assert len(started) == 8, started
