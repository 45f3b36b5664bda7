"""Issue 30: what a read-only `check` of a series asks git, counted (GIT_TRACE).

- A stream that is the last thing judged, with no writer waiting for the index, is only
  checked (`git apply --check`): nothing is written that nobody reads.
- A clean 3-way merge in a round of failed patches holds back only the failed patches on its
  files; the others are judged in the same round, with no second stream.
- Patches that apply at an offset, each on files of its own, are guarded from the files the
  stream leaves (one read for all of them), whether the stream applies or fails.
- The 3-way merges of failed patches on files of their own are one run.
- A check's scratch folders go in a thread, which no unforeseen failure stops.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers import GIT_ID, commit_files, diff_of, make_repo, patch_text, write_patch_set


def started(repo: Path, patches: Path, trace: Path, ref: str = "HEAD") -> tuple[dict, list[str]]:
    """`check --ref REF`'s answer and the git commands it started, in order."""
    proc = subprocess.run(
        [sys.executable, "-m", "patchkeeper", "check", "--ref", ref, "--json",
         "--install", str(repo), "--patches", str(patches)],
        capture_output=True, text=True, check=False,
        env={**os.environ, **GIT_ID, "GIT_TRACE": str(trace)},
    )  # fmt: skip
    assert proc.returncode in (0, 3), proc.stderr
    commands = [
        line.split("trace: built-in: git ", 1)[1]
        for line in trace.read_text().splitlines()
        if "trace: built-in: git " in line
    ]
    return json.loads(proc.stdout), commands


def lines(count: int, word: str) -> str:
    return "".join(f"{word} {n}\n" for n in range(count))


def test_a_ref_where_every_patch_applies_is_checked_not_written(tmp_path: Path) -> None:
    files = {f"f{n}.txt": lines(10, f"file {n}") for n in range(4)}
    repo = make_repo(tmp_path / "repo", files)
    patches = {
        f"p{n}.patch": patch_text(
            diff_of(repo, {f"f{n}.txt": files[f"f{n}.txt"].replace(f"file {n} 5", "fixed")})
        )
        for n in range(4)
    }
    document, commands = started(repo, write_patch_set(tmp_path / "ps", patches), tmp_path / "t")
    assert [p["outcome"] for p in document["targets"][0]["patches"]] == ["applied"] * 4
    applies = [c for c in commands if c.startswith("apply")]
    assert applies == ["apply --cached -v --check"], applies


def test_a_clean_merge_holds_back_only_the_failed_patches_on_its_files(tmp_path: Path) -> None:
    """The first patch merges in 3-way; the two after it conflict on another file (no index
    line: no merge to try). All three are judged from one failed stream."""
    merged = lines(30, "m")
    shared = lines(30, "s")
    repo = make_repo(tmp_path / "repo", {"m.txt": merged, "s.txt": shared})
    first = diff_of(repo, {"m.txt": merged.replace("m 15\n", "m 15 fixed\n")})
    plain = []
    for n in (5, 20):
        diff = diff_of(repo, {"s.txt": shared.replace(f"s {n}\n", f"s {n} fixed\n")})
        plain.append("".join(x for x in diff.splitlines(True) if not x.startswith("index ")))
    patches = {
        "a.patch": patch_text(first),
        "b.patch": patch_text(plain[0]),
        "c.patch": patch_text(plain[1]),
    }
    # Upstream rewords a context line of the first patch (its forward apply fails, its merge
    # is clean) and the lines the other two change.
    commit_files(
        repo,
        {
            "m.txt": merged.replace("m 13\n", "m 13 upstream\n"),
            "s.txt": shared.replace("s 5\n", "s 5 upstream\n").replace("s 20\n", "s 20 up\n"),
        },
        "upstream",
    )
    document, commands = started(repo, write_patch_set(tmp_path / "ps", patches), tmp_path / "t")
    outcomes = [p["outcome"] for p in document["targets"][0]["patches"]]
    assert outcomes == ["merged-3way", "conflict", "conflict"], outcomes
    streams = [c for c in commands if c in ("apply --cached -v", "apply --cached -v --check")]
    assert len(streams) == 1, commands  # main: a second stream for the two after the merge
    assert sum(c.startswith("cat-file --batch") for c in commands) == 2, commands


def moved_world(tmp_path: Path, count: int, conflict: bool) -> tuple[Path, Path]:
    """COUNT patches, each on a file of its own that upstream grows on top (each applies at an
    offset); with CONFLICT, a last one whose line upstream rewords."""
    files = {f"f{n}.txt": lines(30, f"file {n}") for n in range(count)}
    files["c.txt"] = lines(30, "c")
    repo = make_repo(tmp_path / "repo", files)
    patches = {
        f"p{n}.patch": patch_text(
            diff_of(repo, {f"f{n}.txt": files[f"f{n}.txt"].replace(f"file {n} 15\n", "fixed\n")})
        )
        for n in range(count)
    }
    grown = {name: "new 1\nnew 2\nnew 3\n" + text for name, text in files.items()}
    if conflict:
        patches["c.patch"] = patch_text(
            diff_of(repo, {"c.txt": lines(30, "c").replace("c 9\n", "")})
        )
        grown["c.txt"] = files["c.txt"].replace("c 9\n", "c 9 upstream\n")
    commit_files(repo, grown, "upstream grows every file on top")
    return repo, write_patch_set(tmp_path / "ps", patches)


def test_moved_patches_are_guarded_with_no_git_process_each(tmp_path: Path) -> None:
    """Patches that apply at an offset on files no other patch touches are guarded from the
    stream's files (one read for all), in a stream that applies and in one that fails."""
    for conflict in (False, True):
        counts = {}
        for count in (2, 6):
            where = tmp_path / f"{conflict}-{count}"
            repo, patches = moved_world(where, count, conflict)
            document, commands = started(repo, patches, where / "trace")
            outcomes = [p["outcome"] for p in document["targets"][0]["patches"]]
            assert outcomes == ["applied-offset"] * count + ["conflict"] * conflict, outcomes
            counts[count] = len(commands)
        assert counts[6] == counts[2], (conflict, counts)  # main: 13 -> 29, 16 -> 32


def test_three_way_attempts_of_patches_on_their_own_files_are_one_run(tmp_path: Path) -> None:
    """Failed patches that share no file with an earlier one still to judge try their 3-way
    merges in one run, a refused one (its file gone upstream) among them; the one after them
    on a shared file tries after. The runs do not grow with the patches."""
    counts = {}
    for count in (2, 6):
        where = tmp_path / str(count)
        files = {f"f{n}.txt": lines(30, f"f{n}") for n in range(count)}
        files |= {"s.txt": lines(30, "s"), "gone.txt": lines(30, "g")}
        repo = make_repo(where / "repo", files)

        def fix(name: str, n: int = 15, files: dict[str, str] = files) -> dict[str, str]:
            stem = "g" if name == "gone.txt" else name.split(".")[0]
            return {name: files[name].replace(f"{stem} {n}\n", f"{stem} {n} fixed\n")}

        patches = {"p0.patch": patch_text(diff_of(repo, fix("s.txt") | fix("f0.txt")))}
        patches["g.patch"] = patch_text(diff_of(repo, fix("gone.txt")))
        for n in range(1, count):
            patches[f"p{n}.patch"] = patch_text(diff_of(repo, fix(f"f{n}.txt")))
        patches["q.patch"] = patch_text(diff_of(repo, fix("s.txt", 5)))
        upstream = {
            name: text.replace(" 15\n", " 15 upstream\n").replace("s 5\n", "s 5 upstream\n")
            for name, text in files.items()
            if name != "gone.txt"
        }
        commit_files(repo, upstream, "upstream rewords the lines the patches change")
        (repo / "gone.txt").unlink()
        commit_files(repo, {}, "upstream drops gone.txt")
        document, commands = started(repo, write_patch_set(where / "ps", patches), where / "t")
        outcomes = [p["outcome"] for p in document["targets"][0]["patches"]]
        assert outcomes == ["conflict"] * (count + 2), outcomes
        counts[count] = sum(c == "apply --cached -v --3way" for c in commands)
    assert counts == {2: 2, 6: 2}, counts  # main: 4 and 8


def test_a_background_removal_that_raises_leaves_the_next_ones_done(tmp_path: Path) -> None:
    """A check's scratch folders go in a thread; one removal failing in an unforeseen way is
    one warning line, the folders after it still go, and the exit (which waits) comes."""
    script = f"""
import pathlib
from patchkeeper.install.system import temp_folders
real = temp_folders._remove_all
def flaky(folder):
    if folder.name == "first":
        raise ValueError("unforeseen")
    real(folder)
temp_folders._remove_all = flaky
for name in ("first", "second", "third"):
    folder = pathlib.Path({str(tmp_path)!r}) / name
    (folder / "objects" / "ab").mkdir(parents=True)
    temp_folders.remove_in_background(folder)
"""
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first"]
    assert proc.stderr.count("could not remove the temporary folder") == 1, proc.stderr
    assert "(unforeseen)" in proc.stderr


def test_a_chain_of_moved_patches_on_one_file_is_read_from_one_stream(tmp_path: Path) -> None:
    """A failed stream's words still hold for the patches left when every judged one went as
    the stream took it: patches moved one after another on one file need no stream each."""
    counts = {}
    for count in (2, 5):
        where = tmp_path / str(count)
        text = lines(60, "f")
        repo = make_repo(where / "repo", {"f.txt": text, "c.txt": lines(30, "c")})
        patches = {
            "c.patch": patch_text(
                diff_of(repo, {"c.txt": lines(30, "c").replace("c 9\n", "c 9 fixed\n")})
            )
        }
        for n in range(count):
            edited = text.replace(f"f {10 * n + 5}\n", f"f {10 * n + 5} fixed\n")
            patches[f"p{n}.patch"] = patch_text(diff_of(repo, {"f.txt": edited}))
        commit_files(
            repo,
            {
                "f.txt": "new 1\nnew 2\n" + text,
                "c.txt": lines(30, "c").replace("c 9\n", "c 9 up\n"),
            },
            "upstream",
        )
        document, commands = started(repo, write_patch_set(where / "ps", patches), where / "t")
        outcomes = [p["outcome"] for p in document["targets"][0]["patches"]]
        assert outcomes == ["conflict"] + ["applied-offset"] * count, outcomes
        counts[count] = sum(c.startswith("apply --cached -v --check") and "-C1" not in c
                            for c in commands)  # fmt: skip
    assert counts == {2: 1, 5: 1}, counts
