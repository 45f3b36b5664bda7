"""Issue 30: dependent 3-way attempts in a format-patch series.

The attempt of a patch writes its "theirs" blob, which is the preimage of the next patch on
its file: that preimage is missing when the round starts and there after the attempt. Whether
it is there now is read from the scratch index's private object folder (loose_objects.py),
not asked of git, and the patches it concerns merge in one run per layer, not one run each.
The objects of that private folder are written uncompressed (they are thrown away).
"""

from __future__ import annotations

import hashlib
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
    write_patch_set,
)

from patchkeeper.install.plumbing.loose_objects import written_blob


def chained_world(tmp_path: Path, files: list[str]) -> tuple[Path, Path]:
    """Two patches per file of FILES, the second made on the first's result (its `index`
    line names the first's postimage, a blob only the maintainer's repository holds);
    upstream rewrites the line both change, so all of them fail forward."""
    maintainer = make_repo(tmp_path / "maintainer", dict.fromkeys(files, numbered_lines({})))
    first, second = {}, {}
    for name in files:
        first[name] = diff_of(maintainer, {name: numbered_lines({5: "line 5 fixed"})})
        commit_files(
            maintainer, {name: numbered_lines({5: "line 5 fixed"})}, f"first fix of {name}"
        )
        second[name] = diff_of(
            maintainer, {name: numbered_lines({5: "line 5 fixed", 6: "line 6 too"})}
        )
    repo = make_repo(tmp_path / "repo", dict.fromkeys(files, numbered_lines({})))
    commit_files(repo, dict.fromkeys(files, numbered_lines({5: "line 5 upstream"})), "upstream")
    patches = {}
    for name in files:
        stem = name.split(".")[0]
        patches[f"{stem}-1.patch"] = patch_text(first[name])
        patches[f"{stem}-2.patch"] = patch_text(second[name])
    return repo, write_patch_set(tmp_path / "ps", patches)


def check(repo: Path, patches: Path, trace: Path) -> tuple[dict, list[str]]:
    proc, started = traced_check(repo, patches, trace)
    assert proc.returncode == 3, proc.stderr
    return json.loads(proc.stdout), started


def test_the_second_patches_of_two_chains_merge_in_one_run_with_no_blob_question(
    tmp_path: Path,
) -> None:
    repo, patches = chained_world(tmp_path, ["a.txt", "b.txt"])
    document, started = check(repo, patches, tmp_path / "trace")
    results = {r["name"]: r for r in document["targets"][0]["patches"]}
    assert {name: r["outcome"] for name, r in results.items()} == dict.fromkeys(
        ["a-1", "a-2", "b-1", "b-2"], "conflict"
    )
    three_way = [n for n, command in enumerate(started) if "--3way" in command]
    # the first patches in one run, then the second ones in one run (not one run each)
    assert len(three_way) == 2, started
    between = started[three_way[0] + 1 : three_way[1]]
    assert not [c for c in between if c.startswith("cat-file")], between
    # and each fares as it does checked on its own
    for result in document["targets"][0]["patches"]:
        name = f"{result['name']}.patch"
        one = write_patch_set(tmp_path / f"alone-{name}", {name: (patches / name).read_text()})
        alone, _ = check(repo, one, tmp_path / f"trace-{name}")
        [expected] = alone["targets"][0]["patches"]
        for key in ("outcome", "conflicts", "detail"):
            assert result[key] == expected[key], (name, key)


def _write_blob(objects: Path, repo: Path, content: bytes) -> str:
    env = {**os.environ, "GIT_OBJECT_DIRECTORY": str(objects)}
    return subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=repo, input=content,
        capture_output=True, check=True, env=env,
    ).stdout.decode().strip()  # fmt: skip


def test_a_loose_blob_is_found_by_its_prefix_and_anything_unsure_is_left_to_git(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", {"f.txt": "x\n"})
    objects = tmp_path / "objects"
    objects.mkdir()
    sha = _write_blob(objects, repo, b"some content\n")
    assert written_blob(objects, sha[:7]) is True
    assert written_blob(objects, sha) is True
    absent = "0123456" if not sha.startswith("0123456") else "fedcba9"
    assert written_blob(objects, absent) is False
    # two loose objects under one prefix: ambiguous to git, so git is asked
    seen: dict[str, bytes] = {}
    for n in range(100_000):
        data = f"content {n}\n".encode()
        prefix = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()[:4]
        if prefix in seen:
            first = _write_blob(objects, repo, seen[prefix])
            second = _write_blob(objects, repo, data)
            assert first[:4] == second[:4] == prefix
            break
        seen[prefix] = data
    assert written_blob(objects, prefix) is None
    # a tree is no blob: git is asked
    env = {**os.environ, "GIT_OBJECT_DIRECTORY": str(objects)}
    tree = subprocess.run(
        ["git", "mktree"], cwd=repo, input=f"100644 blob {sha}\tf\n".encode(),
        capture_output=True, check=True, env=env,
    ).stdout.decode().strip()  # fmt: skip
    assert written_blob(objects, tree) is None
    # a pack in the folder: what it holds is not read here
    (objects / "pack").mkdir()
    (objects / "pack" / "pack-0.pack").write_bytes(b"")
    assert written_blob(objects, sha) is None


def test_a_blob_missing_then_written_is_no_longer_asked(tmp_path: Path) -> None:
    """The scratch index's own answer: `cat-file` says missing, git writes it, and the
    next question is answered from the folder."""
    from patchkeeper.engine.merging import BlobCheck
    from patchkeeper.install.plumbing.scratch_index import IndexFolder, open_scratch

    repo = make_repo(tmp_path / "repo", {"f.txt": "x\n"})
    folder = IndexFolder()
    try:
        index = open_scratch(repo, folder, private_objects=True)
        content = b"written later\n"
        sha = hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()
        diff = (
            f"diff --git a/f.txt b/f.txt\nindex {sha[:7]}..1234567 100644\n"
            "--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-x\n+y\n"
        ).encode()
        blobs = BlobCheck(index)
        assert blobs.mergeable([(diff, ["f.txt"])]) == ([False], {})
        assert sha[:7] in blobs.absent
        assert index.objects is not None
        _write_blob(index.objects, repo, content)
        trace = tmp_path / "trace"
        os.environ["GIT_TRACE"] = str(trace)
        try:
            assert blobs.mergeable([(diff, ["f.txt"])]) == ([True], {})
        finally:
            del os.environ["GIT_TRACE"]
        assert not trace.exists() or "cat-file" not in trace.read_text()
    finally:
        folder.close()


def test_objects_a_scratch_index_writes_for_itself_are_not_compressed(tmp_path: Path) -> None:
    """They are thrown away with its folder: zlib's work is saved (the ids are the same)."""
    from patchkeeper.install.plumbing.scratch_index import IndexFolder, open_scratch

    text = "".join(f"line {n % 7}\n" for n in range(20_000))  # compresses to almost nothing
    repo = make_repo(tmp_path / "repo", {"f.txt": text})
    diff = diff_of(repo, {"f.txt": text + "one more\n"}).encode()
    folder = IndexFolder()
    try:
        index = open_scratch(repo, folder, private_objects=True)
        index.load_ref("HEAD", ["f.txt"])
        assert index.apply(diff).returncode == 0
        assert index.objects is not None
        [written] = [p for p in index.objects.glob("??/*") if p.is_file()]
        assert written.stat().st_size > len(text)
        assert index.read_file("f.txt") == (text + "one more\n").encode()
    finally:
        folder.close()
