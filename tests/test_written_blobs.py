"""Issue 30: what a 3-way merge wrote is read back without git.

A clean 3-way merge is guarded (merge_guard.py) on the content it left in the scratch index.
That content is a blob git has just written into the index's private objects, uncompressed:
its id is in the index file (index_file.py) and its bytes in one loose file
(loose_objects.py), so reading it costs no `cat-file` process. Anything else (an upstream
blob in the install's store, a path the index lacks, a loose file that does not read whole)
is asked of git as before.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from helpers import (
    commit_files,
    diff_of,
    make_repo,
    numbered_lines,
    patch_text,
    traced_check,
    traced_git_commands,
    write_patch_set,
)

from patchkeeper.install.plumbing.loose_objects import loose_blob


def test_a_loose_blob_reads_whole_or_not_at_all(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"f.txt": "x\n"})
    objects = tmp_path / "objects"
    objects.mkdir()
    env = {**os.environ, "GIT_OBJECT_DIRECTORY": str(objects)}
    sha = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=repo, input=b"some content\n",
        capture_output=True, check=True, env=env,
    ).stdout.decode().strip()  # fmt: skip
    assert loose_blob(objects, sha) == b"some content\n"
    assert loose_blob(objects, sha[:7]) is None  # a prefix: only a full id is read
    assert loose_blob(objects, "0" * 40 if sha != "0" * 40 else "1" * 40) is None
    tree = subprocess.run(
        ["git", "mktree"], cwd=repo, input=f"100644 blob {sha}\tf\n".encode(),
        capture_output=True, check=True, env=env,
    ).stdout.decode().strip()  # fmt: skip
    assert loose_blob(objects, tree) is None  # a tree is no blob
    path = objects / sha[:2] / sha[2:]
    whole = path.read_bytes()
    path.chmod(0o644)
    path.write_bytes(whole[:-6])  # cut short: its stream does not end
    assert loose_blob(objects, sha) is None


def test_the_merged_file_is_read_from_the_private_objects_and_the_rest_from_git(
    tmp_path: Path,
) -> None:
    from patchkeeper.install.plumbing.scratch_index import IndexFolder, open_scratch

    repo = make_repo(tmp_path / "repo", {"a.txt": numbered_lines({}), "b.txt": "b\n"})
    diff = diff_of(repo, {"a.txt": numbered_lines({5: "line 5 fixed"})}).encode()
    folder = IndexFolder()
    try:
        index = open_scratch(repo, folder, private_objects=True)
        index.load_ref("HEAD", ["a.txt", "b.txt"])
        assert index.apply(diff).returncode == 0
        trace = tmp_path / "trace"
        os.environ["GIT_TRACE"] = str(trace)
        try:
            alone = index.read_files(["a.txt"])
            both = index.read_files(["b.txt", "a.txt", "gone.txt"])
        finally:
            del os.environ["GIT_TRACE"]
    finally:
        folder.close()
    assert alone == {"a.txt": numbered_lines({5: "line 5 fixed"}).encode()}
    assert both == {"b.txt": b"b\n", "a.txt": alone["a.txt"]}
    assert list(both) == ["b.txt", "a.txt"]  # in the order asked, as git's answer was
    # a.txt never asked of git; b.txt (upstream's blob) and gone.txt in one batch
    assert traced_git_commands(trace) == ["cat-file --batch"], traced_git_commands(trace)


def test_a_clean_merge_is_guarded_without_a_cat_file(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"f.txt": numbered_lines({})})
    fix = diff_of(repo, {"f.txt": numbered_lines({5: "line 5 fixed"})})
    commit_files(repo, {"f.txt": numbered_lines({7: "line 7 upstream"})}, "upstream moves on")
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(fix)})
    trace = tmp_path / "trace"
    proc, started = traced_check(repo, patches, trace)
    [result] = json.loads(proc.stdout)["targets"][0]["patches"]
    assert result["outcome"] == "merged-3way", proc.stdout
    merge = next(n for n, command in enumerate(started) if "--3way" in command)
    assert not [c for c in started[merge:] if c.startswith("cat-file")], started
