"""Batched classification (and reuse across refs) gives exactly what one-by-one gives.

The engine applies patches in batches, splits a batch where git says it failed, and reuses
results across refs with the same blobs. None of that may change an answer: every scenario
here is classified both ways and compared field by field (outcome, variant, detail, offsets,
merged files, conflicting hunks, notes), and for `apply` also the work tree written and the
records kept. One patch set holds every situation at once, since batching is about how
patches meet: chains on one file, hold-backs, two-file patches, a corrupt patch among good
ones, new and deleted files, CRLF bytes, quoted paths, variants, headers and conditions.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import asdict
from pathlib import Path

import pytest

from patchkeeper.demo.sandbox import TAGS, Sandbox
from patchkeeper.engine import classify as engine
from patchkeeper.engine.checking import check_refs
from patchkeeper.engine.patching import apply_patches, worktree_status
from patchkeeper.install.checkout.install import open_install
from patchkeeper.install.plumbing.scratch_index import ScratchIndex, scratch_index
from patchkeeper.patchset.load import load_patch_set
from patchkeeper.patchset.settings import load_settings
from tests.helpers import commit_files, diff_of, git, make_repo, patch_text, write_patch_set

LINES = "".join(f"line {n}\n" for n in range(1, 41))
SMALL = "".join(f"row {n}\n" for n in range(1, 11))
REPEATED = "".join(f"start\nvalue = {n % 2}\nend\n" for n in range(12))


def edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def scenario(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """An upstream with five tags and a patch set meeting every situation across them."""
    files = {
        "app.py": LINES,
        "other.py": LINES,
        "gone.py": SMALL,
        "sp ace.txt": SMALL,
        "döcs/nöte.md": SMALL,
        "repeat.py": REPEATED,
        "tail.txt": "a\nb\nc",  # no newline at the end
        **{f"f{n:02d}.py": SMALL.replace("row", f"f{n}") for n in range(20)},
    }
    repo = make_repo(tmp_path / "up", files, tag="v1.0.0")
    (repo / "crlf.txt").write_bytes(b"".join(b"crlf %d\r\n" % n for n in range(1, 12)))
    git(repo, "add", "crlf.txt")
    git(repo, "commit", "-qm", "crlf")
    git(repo, "tag", "-f", "v1.0.0")

    def fix(path: str, old: str, new: str, **fields: str) -> str:
        return patch_text(diff_of(repo, {path: edit(files[path], old, new)}), **fields)

    app_fixed = edit(LINES, "line 10\n", "line 10 fixed\n")
    commit_files(repo, {"app.py": app_fixed}, "scratch")  # made on top of app-fix: needs it
    chain = diff_of(repo, {"app.py": edit(app_fixed, "line 11\n", "line 11 chained\n")})
    git(repo, "reset", "-q", "--hard", "v1.0.0")
    git(repo, "rm", "-q", "gone.py")
    deletion = git(repo, "diff", "--cached") + "\n"
    git(repo, "reset", "-q", "--hard")
    crlf = (repo / "crlf.txt").read_bytes()
    (repo / "crlf.txt").write_bytes(crlf.replace(b"crlf 6\r", b"crlf six\r"))
    crlf_diff = subprocess.run(["git", "diff"], cwd=repo, capture_output=True, check=True).stdout
    git(repo, "checkout", "--", "crlf.txt")
    corrupt = "\n".join(
        ["diff --git a/f06.py b/f06.py", "new file mode 100644", "--- a/f06.py", "+++ b/f06.py",
         "@@ -1,2 +1,2 @@", " f6 1", "-f6 2", "+f6 two", ""]
    )  # fmt: skip
    patches = {
        "app-fix.patch": fix("app.py", "line 10\n", "line 10 fixed\n"),
        "app-late.patch": fix("app.py", "line 30\n", "line 30 fixed\n"),
        "app-chain.patch": patch_text(chain),
        "other.patch": fix("other.py", "line 5\n", "line 5 x\n"),
        "new-file.patch": patch_text(diff_of(repo, {"pkg/new.py": "x = 1\n"})),
        "delete.patch": patch_text(deletion),
        "two-files.patch": patch_text(
            diff_of(
                repo,
                {
                    "f01.py": edit(files["f01.py"], "f1 3\n", "f1 three\n"),
                    "f02.py": edit(files["f02.py"], "f2 3\n", "f2 three\n"),
                },
            )
        ),
        "quoted.patch": patch_text(
            diff_of(
                repo,
                {
                    "sp ace.txt": edit(SMALL, "row 4\n", "row four\n"),
                    "döcs/nöte.md": edit(SMALL, "row 7\n", "row seven\n"),
                },
            )
        ),
        "fixed-in.patch": fix("f03.py", "f3 5\n", "f3 five\n", upstream_fixed_in=">=1.3"),
        "has-by-content.patch": fix("f04.py", "f4 5\n", "f4 five\n").replace(
            "---\n", "Upstream-Has:\n f04.py: HAS_IT\n---\n", 1
        ),
        "variant/old.patch": fix("f05.py", "f5 5\n", "f5 five\n", applies_to="<2.0"),
        "variant/new.patch": fix("f05.py", "f5 6\n", "f5 six\n", applies_to=">=2.0"),
        "not-applicable.patch": fix("f11.py", "f11 2\n", "f11 two\n", applies_to="<1.0"),
        "corrupt.patch": patch_text(corrupt),
        "repeat.patch": fix("repeat.py", "start\nvalue = 1\n", "start\nvalue = 10\n"),
        "tail.patch": fix("tail.txt", "b\n", "B\n"),
        **{
            f"f{n:02d}.patch": fix(f"f{n:02d}.py", f"f{n} 5\n", f"f{n} five\n")
            for n in range(7, 11)
        },
        "f12-shares-f07.patch": patch_text(
            diff_of(repo, {"f07.py": edit(files["f07.py"], "f7 9\n", "f7 nine\n")})
        ),
        **{
            f"f{n:02d}.patch": fix(f"f{n:02d}.py", f"f{n} 5\n", f"f{n} five\n")
            for n in range(13, 20)
        },
    }
    patches_dir = write_patch_set(tmp_path / "ps", {k: v for k, v in patches.items()})
    (patches_dir / "crlf.patch").write_bytes(
        b"Description: crlf\nSmoke: none (a test fixture)\n---\n" + crlf_diff
    )
    with (patches_dir / "series").open("a") as series:
        series.write("crlf.patch\n")

    # v1.1.0: offsets, a 3-way merge, a conflict, upstream has two of them, a file deleted.
    moved = "top 1\ntop 2\ntop 3\n" + LINES
    commit_files(
        repo,
        {
            "app.py": moved,
            "f07.py": edit(files["f07.py"], "f7 3\n", "f7 3 tuned\n"),  # 3-way
            "f08.py": edit(files["f08.py"], "f8 5\n", "f8 5 upstream\n"),  # conflict
            "f10.py": edit(files["f10.py"], "f10 5\n", "f10 five\n"),  # upstream has it
            "pkg/new.py": "x = 1\n",  # upstream has the new file
            "repeat.py": "start\nvalue = 3\nend\n" + REPEATED,
        },
        "v1.1",
        tag="v1.1.0",
    )
    git(repo, "rm", "-q", "gone.py")
    git(repo, "commit", "-qm", "gone")
    git(repo, "tag", "-f", "v1.1.0")
    # v1.2.0: app-fix conflicts (its followers on app.py are held back), other.py goes,
    # f04 says HAS_IT, f02 of the two-file patch conflicts.
    commit_files(
        repo,
        {
            "app.py": edit(moved, "line 10\n", "line 10 upstream\n"),
            "f04.py": files["f04.py"] + "HAS_IT\n",
            "f02.py": edit(files["f02.py"], "f2 3\n", "f2 3 upstream\n"),
            "tail.txt": "a\nb\nc\n",
        },
        "v1.2",
        tag="v1.2.0",
    )
    git(repo, "rm", "-q", "other.py")
    git(repo, "commit", "-qm", "other gone")
    git(repo, "tag", "-f", "v1.2.0")
    # v1.3.0: Upstream-Fixed-In, pkg/new.py differs, crlf changes near the fix.
    commit_files(
        repo,
        {
            "pkg/new.py": "x = 2\n",
            "crlf.txt": "".join(f"crlf {n}\r\n" for n in range(1, 12)).replace("crlf 5", "c5"),
        },
        "v1.3",
        tag="v1.3.0",
    )
    # v2.0.0: the other variant.
    commit_files(repo, {"README": "two\n"}, "v2", tag="v2.0.0")
    git(repo, "checkout", "-q", "v1.0.0")
    return repo, patches_dir, ["v1.0.0", "v1.1.0", "v1.2.0", "v1.3.0", "v2.0.0"]


def plain(results) -> list[dict]:
    out = []
    for result in results:
        data = asdict(result)
        data.pop("trees")
        out.append(data)
    return out


def checked(repo: Path, patches: Path, refs: list[str], **options) -> list[list[dict]]:
    patch_set = load_patch_set(patches)
    return [plain(r.results) for r in check_refs(repo, patch_set, refs, **options)]


def test_check_batched_and_reused_equals_one_by_one(tmp_path: Path) -> None:
    repo, patches, refs = scenario(tmp_path)
    one_by_one = checked(repo, patches, refs, reuse=False, batch=False)
    outcomes = {r["outcome"] for ref in one_by_one for r in ref}
    # The scenario means something only if it reaches every outcome check can give.
    assert outcomes >= {
        "applied", "applied-offset", "merged-3way", "upstream-has-it", "not-applicable",
        "conflict", "invalid",
    }  # fmt: skip
    assert any("held back" in r["detail"] for ref in one_by_one for r in ref)
    assert checked(repo, patches, refs, reuse=False, batch=True) == one_by_one
    assert checked(repo, patches, refs, reuse=True, batch=True) == one_by_one
    # Refs in another order, and repeated: reuse must not depend on the order.
    shuffled = [refs[2], refs[0], refs[4], refs[2], refs[1], refs[3]]
    expected = [one_by_one[refs.index(ref)] for ref in shuffled]
    assert checked(repo, patches, shuffled, reuse=True, batch=True) == expected


def _state(repo: Path) -> dict[str, object]:
    """The work tree's files and patchkeeper's records (timestamps aside)."""
    files = {
        p.relative_to(repo).as_posix(): p.read_bytes()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(repo).parts
    }
    state = repo / ".git" / "patchkeeper"
    records = {}
    if (state / "applied.json").is_file():
        document = json.loads((state / "applied.json").read_text())
        for name, record in document["patches"].items():
            record.pop("applied_at")
            records[name] = (record, (state / "written" / f"{name}.diff").read_bytes())
    return {"files": files, "records": records}


def _apply_both_ways(
    monkeypatch: pytest.MonkeyPatch, repo: Path, patches: Path, prepare=None
) -> None:
    """Apply (and then read status) on two copies, batched and one by one: same everything."""
    seen = []
    for batched in (False, True):
        copy = repo.parent / f"{repo.name}-{'batched' if batched else 'single'}"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(repo, copy, symlinks=True)
        monkeypatch.setattr(engine, "BATCHES", batched)
        install = open_install(copy)
        settings = load_settings(patches)
        if prepare is not None:
            prepare(install, settings)
        patch_set = load_patch_set(patches)
        applied = plain(apply_patches(install, settings, patch_set).results)
        after = _state(copy)
        status = plain(worktree_status(install, settings, patch_set).results)
        again = plain(apply_patches(install, settings, patch_set).results)
        seen.append((applied, after, status, again, _state(copy)))
    assert seen[0] == seen[1]


@pytest.mark.parametrize("tag", ["v1.0.0", "v1.1.0", "v1.2.0", "v1.3.0", "v2.0.0"])
def test_apply_batched_equals_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tag: str
) -> None:
    repo, patches, _ = scenario(tmp_path)
    git(repo, "checkout", "-q", tag)
    _apply_both_ways(monkeypatch, repo, patches)


def test_apply_with_records_drift_and_changed_patches_equals_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records in play: one patch drifted by hand, one patch file changed since it was
    applied, one record whose content a stash took, then an upstream move under them."""
    repo, patches, _ = scenario(tmp_path)
    monkeypatch.setattr(engine, "BATCHES", True)
    apply_patches(open_install(repo), load_settings(patches), load_patch_set(patches))
    (repo / "f13.py").write_text((repo / "f13.py").read_text().replace("f13 five", "f13 mine"))
    changed = (patches / "f14.patch").read_text().replace("+f14 five", "+f14 FIVE")
    (patches / "f14.patch").write_text(changed)
    (repo / "f15.py").write_text(SMALL.replace("row", "f15"))  # its content is gone
    _apply_both_ways(monkeypatch, repo, patches)

    def move_upstream(install, settings) -> None:  # records made on another HEAD
        git(install.path, "checkout", "-q", "-f", "v1.1.0")
        git(install.path, "clean", "-q", "-fd")

    _apply_both_ways(monkeypatch, repo, patches, prepare=move_upstream)


def test_the_practice_upstream_batched_equals_one_by_one(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox.fetch_tags()
    refs = list(TAGS)
    one_by_one = checked(sandbox.install, sandbox.patches, refs, reuse=False, batch=False)
    assert checked(sandbox.install, sandbox.patches, refs) == one_by_one
    assert [r["outcome"] for r in one_by_one[-1]] == [
        "upstream-has-it",  # adoption-retry
        "conflict",  # schema-once
        "upstream-has-it",  # heartbeat-fence, retired by its scoped probe
    ]
    _apply_both_ways(monkeypatch, sandbox.install, sandbox.patches)


@pytest.mark.parametrize("shared", [True, False], ids=["some-share-files", "disjoint"])
def test_a_large_batch_splits_where_git_says_and_matches_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared: bool
) -> None:
    """Forty patches, every fifth failing one way or another, some sharing files (the batch
    is split at the first that failed) or none (the failed ones are judged together: their
    reverse checks in one run, their 3-way merges in one run)."""
    files = {f"m{n:02d}.py": LINES.replace("line", f"m{n}") for n in range(40)}
    repo = make_repo(tmp_path / "up", files, tag="v1.0.0")
    patches = {}
    for n in range(40):
        path = f"m{n:02d}.py"
        text = edit(files[path], f"m{n} 20\n", f"m{n} 20 fixed\n")
        patches[f"p{n:02d}.patch"] = patch_text(diff_of(repo, {path: text}))
        if shared and n % 7 == 6:  # a second patch on the same file, independent of it
            other = edit(files[path], f"m{n} 35\n", f"m{n} 35 too\n")
            patches[f"p{n:02d}b.patch"] = patch_text(diff_of(repo, {path: other}))
    patch_dir = write_patch_set(tmp_path / "ps", patches)
    changed = {}
    for n in range(0, 40, 5):
        path = f"m{n:02d}.py"
        kind = (n // 5) % 4
        if kind == 0:
            changed[path] = edit(files[path], f"m{n} 20\n", f"m{n} 20 upstream\n")
        elif kind == 1:
            changed[path] = edit(files[path], f"m{n} 18\n", f"m{n} 18 tuned\n")
        elif kind == 2:
            changed[path] = edit(files[path], f"m{n} 20\n", f"m{n} 20 fixed\n")
        else:
            changed[path] = "new 1\nnew 2\n" + files[path]
    commit_files(repo, changed, "release", tag="v1.1.0")
    refs = ["v1.0.0", "v1.1.0"]
    calls: list[bytes] = []
    flag_log: list[tuple[str, ...]] = []
    real_apply = ScratchIndex.apply

    def counted(self: ScratchIndex, diff: bytes, *flags: str):
        calls.append(diff)
        flag_log.append(flags)
        return real_apply(self, diff, *flags)

    monkeypatch.setattr(ScratchIndex, "apply", counted)
    one_by_one = checked(repo, patch_dir, refs, reuse=False, batch=False)
    alone = len(calls)
    assert {r["outcome"] for r in one_by_one[1]} >= {
        "applied", "applied-offset", "merged-3way", "upstream-has-it", "conflict"
    }  # fmt: skip
    calls.clear()
    flag_log.clear()
    assert checked(repo, patch_dir, refs, reuse=False) == one_by_one
    assert len(calls) < alone / 3  # batches really ran, and were split
    assert max(diff.count(b"diff --git ") for diff in calls) >= 40
    if not shared:  # the failed ones were judged together
        streams = [flags for diff, flags in zip(calls, flag_log, strict=True)
                   if diff.count(b"diff --git ") > 1]  # fmt: skip
        assert ("--check", "--reverse") in streams and ("--3way",) in streams


def test_read_blobs_answers_each_name_in_one_process(tmp_path: Path) -> None:
    """Blob ids (abbreviated too), index paths with blanks, a path not there and a tree among
    them: each blob's content, nothing for the rest, and the reading stays in step."""
    repo = make_repo(tmp_path / "repo", {"a b.txt": "one\n", "dir/c.txt": "two\n"})
    with scratch_index(repo) as index:
        index.load_ref("HEAD", ["a b.txt", "dir/c.txt"])
        blob = git(repo, "rev-parse", "HEAD:dir/c.txt").strip()
        tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
        names = [tree, ":a b.txt", ":gone x.txt", blob[:10], ":dir/c.txt"]
        assert index.read_blobs(names) == {
            ":a b.txt": b"one\n",
            blob[:10]: b"two\n",
            ":dir/c.txt": b"two\n",
        }
