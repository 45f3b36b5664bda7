"""The update path asks git only what it needs: one whole-tree `git add` (the snapshot), no
`git reset` when the index is HEAD's already, every recorded diff taken out in one `git apply`
(none when the tree holds exactly the blobs they wrote), the new version worked out once,
`present_in_ref` only for a patch whose reverse check succeeds, and only the paths in the
edits ref merged back. Each with the outcome it must keep."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from patchkeeper.engine import patching
from patchkeeper.install.checkout.install import open_install
from patchkeeper.patchset.load import load_patch_set
from patchkeeper.patchset.settings import load_settings
from tests.helpers import GIT_ID, commit_files, diff_of, git, make_repo, patch_text

LINES = "".join(f"line {n}\n" for n in range(1, 41))


def setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    """An upstream with a release to update to, an install cloned from it, three patches."""
    files = {f"f{n}.py": LINES.replace("line", f"f{n}") for n in range(5)}
    upstream = make_repo(tmp_path / "upstream", files, tag="v1.0.0")
    install = tmp_path / "install"
    git(tmp_path, "clone", "-q", str(upstream), str(install))
    patches = tmp_path / "patches"
    patches.mkdir()
    names = []
    for n in range(3):
        text = files[f"f{n}.py"].replace(f"f{n} 20\n", f"f{n} 20 fixed\n")
        (patches / f"fix{n}.patch").write_text(patch_text(diff_of(install, {f"f{n}.py": text})))
        names.append(f"fix{n}.patch")
    (patches / "series").write_text("\n".join(names) + "\n")
    (patches / "patchkeeper.toml").write_text(
        f'[install]\npath = "{install}"\n\n[update]\ncommand = ["git", "pull", "--ff-only", "-q"]\n'
    )
    changed = {"f0.py": "new 1\nnew 2\n" + files["f0.py"], "f4.py": files["f4.py"] + "more\n"}
    commit_files(upstream, changed, "release", tag="v1.1.0")
    return upstream, install, patches


def pk(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "patchkeeper", *map(str, args)],
        capture_output=True, text=True, check=False,
        env={**os.environ, **GIT_ID, "NO_COLOR": "1", **(env or {})},
    )  # fmt: skip


def traced(trace: Path, command: str) -> int:
    pattern = re.compile(rf"trace: built-in: git {re.escape(command)}$")
    return sum(1 for line in trace.read_text().splitlines() if pattern.search(line))


@pytest.mark.parametrize("staged", [False, True], ids=["index-clean", "index-staged"])
def test_update_reads_the_tree_once_resets_only_a_staged_index_reverses_once(
    tmp_path: Path, staged: bool
) -> None:
    _, install, patches = setup(tmp_path)
    assert pk("apply", "--install", install, "--patches", patches).returncode == 0
    (install / "f3.py").write_text((install / "f3.py").read_text() + "mine\n")
    (install / "notes.txt").write_text("untracked, mine\n")
    if staged:
        git(install, "add", "f3.py")
    trace = tmp_path / "trace"
    proc = pk("update", "--install", install, "--patches", patches, env={"GIT_TRACE": str(trace)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The snapshot: one stat pass (`status`), no whole-tree `add -A`; the merge-back reads
    # 2 paths only.
    status = "status --porcelain=v2 -z --untracked-files=all --no-renames --ignore-submodules=none"
    assert traced(trace, status) == 1
    assert traced(trace, "add -A -- .") == 0
    assert traced(trace, "reset -q") == (1 if staged else 0)
    # three records, one apply (on their paths, then, with edits of the operator's, the tree)
    assert traced(trace, "apply --cached -v --reverse") == 1
    assert git(install, "diff", "--cached", "--name-only") == ""  # the index is HEAD's
    assert (install / "f3.py").read_text().endswith("mine\n")
    assert (install / "notes.txt").read_text() == "untracked, mine\n"
    assert "f0 20 fixed" in (install / "f0.py").read_text()
    assert (install / "f4.py").read_text().endswith("more\n")
    assert git(install, "diff", "--name-only").split() == ["f0.py", "f1.py", "f2.py", "f3.py"]
    assert git(install, "ls-files", "--others").split() == ["notes.txt"]


def test_patches_alone_come_out_without_a_whole_tree_index(tmp_path: Path) -> None:
    """Nothing of the operator's: the snapshot is found to be HEAD plus exactly what the
    records wrote, from the blob ids of one tree diff (no read-tree of 20,000 entries, and no
    `git apply` at all)."""
    _, install, patches = setup(tmp_path)
    assert pk("apply", "--install", install, "--patches", patches).returncode == 0
    trace = tmp_path / "trace"
    proc = pk("update", "--install", install, "--patches", patches, env={"GIT_TRACE": str(trace)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not [line for line in trace.read_text().splitlines() if "git read-tree" in line]
    assert traced(trace, "apply --cached -v --reverse") == 0
    # The snapshot, made from the dirty paths, says what it changed: no diff of two trees;
    # the tree write reuses it.
    set_aside = trace.read_text().split("built-in: git pull", 1)[0].splitlines()
    tree_diff = re.compile(r"built-in: git (diff-tree|diff --name-only) ")
    assert not [line for line in set_aside if tree_diff.search(line)]
    assert git(install, "for-each-ref", "refs/patchkeeper/") == ""  # no edits ref was needed
    assert all("fixed" in (install / f"f{n}.py").read_text() for n in range(3))


def test_the_new_version_is_worked_out_once_when_nothing_ran_after_the_apply(
    tmp_path: Path,
) -> None:
    """No smoke check, no post-apply command, no edits merged back: the report's version and
    HEAD after the update are the apply phase's own, not asked of git again."""
    _, install, patches = setup(tmp_path)
    assert pk("apply", "--install", install, "--patches", patches).returncode == 0
    trace = tmp_path / "trace"
    env = {"GIT_TRACE": str(trace)}
    proc = pk("update", "--json", "--install", install, "--patches", patches, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["install"]["version_after"] == "1.1.0"
    assert doc["install"]["head_after"] == git(install, "rev-parse", "HEAD")
    trace.write_text(trace.read_text().split("built-in: git pull", 1)[1])
    assert traced(trace, "describe --tags --match 'v[0-9]*' --end-of-options HEAD") == 1


def test_a_drifted_record_falls_back_to_one_by_one_and_is_kept_with_the_edits(
    tmp_path: Path,
) -> None:
    _, install, patches = setup(tmp_path)
    assert pk("apply", "--install", install, "--patches", patches).returncode == 0
    (install / "f1.py").write_text((install / "f1.py").read_text().replace("fixed", "by hand"))
    trace = tmp_path / "trace"
    env = {"GIT_TRACE": str(trace)}
    proc = pk("update", "--install", install, "--patches", patches, "--json", env=env)
    # set-aside, on its paths alone (fails: drift), all at once on the tree (fails), then each
    # (what the updater runs after it, and the kept ref's classification, are not counted)
    set_aside = trace.read_text().split("built-in: git pull", 1)[0]
    trace.write_text(set_aside)
    assert traced(trace, "apply --cached -v --reverse") == 1 + 1 + 3
    document = json.loads(proc.stdout)
    assert proc.returncode == 5
    assert (
        "fix1 was changed by hand since it was applied (f1.py): kept with your edits"
        in (document["notes"])
    )
    assert "f0 20 fixed" in (install / "f0.py").read_text()
    assert "f1 20 fixed" in (install / "f1.py").read_text()  # the fix, afresh
    kept = document["restore"]
    assert [k["path"] for k in kept["kept"]] == ["f1.py"]  # the hand edit, kept in its ref
    assert "f1 20 by hand" in git(install, "show", f"{kept['ref']}:f1.py")


def test_present_in_ref_is_asked_only_where_the_reverse_check_succeeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, install, patches = setup(tmp_path)
    asked: list[str] = []
    real = patching.present_in_ref

    def counted(repo: Path, ref: str, variant) -> bool:  # type: ignore[no-untyped-def]
        asked.append(variant.path.name)
        return real(repo, ref, variant)

    monkeypatch.setattr(patching, "present_in_ref", counted)
    settings, patch_set = load_settings(patches), load_patch_set(patches)
    report = patching.worktree_status(open_install(install), settings, patch_set)
    assert [r.outcome for r in report.results] == ["pending"] * 3 and asked == []
    # f2's fix, present but never recorded: now (and only now) whose content it is matters.
    (install / "f2.py").write_text((install / "f2.py").read_text().replace("f2 20", "f2 20 fixed"))
    report = patching.worktree_status(open_install(install), settings, patch_set)
    assert [r.outcome for r in report.results][2] == "already-applied"
    assert asked == ["fix2.patch"]


def test_merge_back_touches_only_the_paths_in_the_edits_ref(tmp_path: Path) -> None:
    """An edit merged back on top of the new release; a file the updater left changed
    elsewhere is not read into the merge, nor written."""
    _, install, patches = setup(tmp_path)
    assert pk("apply", "--install", install, "--patches", patches).returncode == 0
    (install / "f0.py").write_text((install / "f0.py").read_text() + "my tail\n")
    updater = tmp_path / "updater.sh"
    updater.write_text("#!/bin/sh\ngit pull --ff-only -q && echo 'left by the updater' > f3.py\n")
    updater.chmod(0o755)
    config = (patches / "patchkeeper.toml").read_text()
    (patches / "patchkeeper.toml").write_text(
        config.replace('["git", "pull", "--ff-only", "-q"]', f'["{updater}"]')
    )
    proc = pk("update", "--install", install, "--patches", patches, "--json")
    assert '"restored": [\n      "f0.py"\n    ]' in proc.stdout, proc.stdout
    text = (install / "f0.py").read_text()
    assert text.startswith("new 1\nnew 2\n") and text.endswith("my tail\n")
    assert "f0 20 fixed" in text
    assert (install / "f3.py").read_text() == "left by the updater\n"


@pytest.mark.parametrize("case", ["branch-only", "version-file", "tags-followed"])
def test_origin_is_asked_for_release_tags_only_when_the_version_needs_them(
    tmp_path: Path, case: str
) -> None:
    """`git describe` needs the new release's tag when the updater fetched the branch only;
    a version file that states the version does not, nor a fetch that brought the tag along:
    then no round trip to origin is made for tags."""
    upstream, install, patches = setup(tmp_path)
    commit_files(upstream, {"VERSION": '__version__ = "1.2.0"\n'}, "release 1.2.0")
    git(upstream, "tag", "v1.2.0")
    config = patches / "patchkeeper.toml"
    text = config.read_text()
    if case != "tags-followed":
        text = text.replace('"-q"]', '"-q", "--no-tags"]')  # a branch-only updater
    if case == "version-file":
        text = text.replace("[install]\n", '[install]\nversion_file = "VERSION"\n')
    config.write_text(text)
    assert pk("apply", "--install", install, "--patches", patches).returncode == 0
    trace = tmp_path / "trace"
    proc = pk(
        "update", "--json", "--install", install, "--patches", patches,
        env={"GIT_TRACE": str(trace)},
    )  # fmt: skip
    code, doc = proc.returncode, json.loads(proc.stdout)
    assert code == 0, proc.stdout + proc.stderr
    assert doc["install"]["version_after"] == "1.2.0"
    asked = traced(trace, "ls-remote --tags origin 'refs/tags/v*'")
    assert asked == (1 if case == "branch-only" else 0)
    # Whether HEAD carries a release tag is read from describe's own answer (its tag, or a
    # distance from one), not asked of git again; describe is asked again only when tags
    # were learnt from origin.
    assert traced(trace, "tag --points-at HEAD --list 'v[0-9]*'") == 0
    after = trace.read_text().split("built-in: git pull", 1)[1]
    described = after.count("built-in: git describe ")
    assert described == {"branch-only": 2, "version-file": 0, "tags-followed": 1}[case]
    assert git(install, "tag", "--list", "v1.2.0") == ("" if case == "version-file" else "v1.2.0")


def test_an_update_asks_git_each_question_once(tmp_path: Path) -> None:
    """patchkeeper's own git processes in an update whose patches alone were in the tree
    (the updater runs without GIT_TRACE, so the trace holds ours alone): HEAD is read three
    times (the run's start; after the updater, whether it moved: one that exits 0 and leaves
    HEAD behind its branch did not update; the apply), unmerged paths listed once by
    `ls-files -u` (phase 5's
    leftovers: the updater may leave some; before it, the snapshot's `git status` says
    them), the refs of earlier updates listed once (phase 5 has preflight's answer), and the
    set-aside diffs no two trees: its snapshot says what it changed."""
    _, install, patches = setup(tmp_path)
    config = patches / "patchkeeper.toml"
    config.write_text(config.read_text().replace('["git",', '["env", "-u", "GIT_TRACE", "git",'))
    assert pk("apply", "--install", install, "--patches", patches).returncode == 0
    trace = tmp_path / "trace"
    proc = pk("update", "--install", install, "--patches", patches, env={"GIT_TRACE": str(trace)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    commands = re.findall(r"trace: built-in: git (.*)$", trace.read_text(), re.MULTILINE)
    assert sum(c == "rev-parse -q --verify 'HEAD^{commit}'" for c in commands) == 3, commands
    assert sum(c.startswith("ls-files -u") for c in commands) == 1, commands
    assert sum(c.startswith("for-each-ref") for c in commands) == 1, commands
    assert sum(c.startswith("diff-tree") for c in commands) == 1, commands  # the apply's
    # The patch moved on the new release: the offset guard (engine/offset_guard.py) reads the
    # file before and after the move, and the batch applies that patch alone: 4 processes
    # that came with it. Whether its reverse applies at its own place is not asked: the file
    # before holds no run of the lines the patch leaves (engine/could_apply.py).
    assert sum("--reverse" in c for c in commands) == 0, commands
    assert not [c for c in commands if c.startswith("tag --points-at")], commands
    # 32 (+5) before these were asked once; 27 (+5) with a snapshot of the whole tree; 26
    # (+4) with one of the dirty paths alone; 23 (+4) with each question asked once; 24 in
    # all since the merge of conflicts2 (the moved patch costs one apply and one read now);
    # 25 since an updater that exits 0 is asked whether it moved HEAD (review4)
    assert len(commands) <= 25, commands


@pytest.mark.parametrize("preview", [False, True], ids=["status-says", "lock-asks"])
def test_unmerged_paths_are_refused_before_anything_changes(tmp_path: Path, preview: bool) -> None:
    """Unmerged index entries with no merge under way (a conflicted `git stash pop`): the
    update refuses them, the install as it was and no journal left. Without --preview the
    snapshot's `git status` says them, just before phase 3; with one, the lock asks."""
    _, install, patches = setup(tmp_path)
    assert pk("apply", "--install", install, "--patches", patches).returncode == 0
    blob = git(install, "rev-parse", "HEAD:f3.py")
    entries = f"0 {'0' * 40}\tf3.py\n" + "".join(
        f"100644 {blob} {stage}\tf3.py\n" for stage in (1, 2, 3)
    )
    subprocess.run(["git", "update-index", "--index-info"], cwd=install, input=entries,
                   text=True, check=True)  # fmt: skip
    head, tree = git(install, "rev-parse", "HEAD"), (install / "f0.py").read_text()
    asked = ["--preview", "v1.1.0"] if preview else []
    proc = pk("update", *asked, "--install", install, "--patches", patches)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().endswith(
        f"{install}: the install has unmerged paths (f3.py); finish or abort it first"
    ), proc.stderr
    assert git(install, "rev-parse", "HEAD") == head
    assert (install / "f0.py").read_text() == tree  # the patch still in place
    assert git(install, "ls-files", "-u")  # left to git and the operator
    assert git(install, "for-each-ref", "refs/patchkeeper/") == ""
    assert not (install / ".git" / "patchkeeper" / "journal.json").exists()


def test_the_update_command_loads_the_later_phases_only_when_they_come() -> None:
    """Importing `update` (all an update needs up to the updater) loads neither the classifier
    nor the smoke checks: phases 5-10's modules load while the updater runs (update/run.py)."""
    code = (
        "import sys\nimport patchkeeper.commands.update\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    modules = set(proc.stdout.split())
    assert "patchkeeper.update.set_aside" in modules
    later = {"patchkeeper.engine.patching", "patchkeeper.engine.classify",
             "patchkeeper.proof.smoke.for_patches", "patchkeeper.update.reapply",
             "patchkeeper.update.restore", "patchkeeper.update.checks"}  # fmt: skip
    assert not later & modules


def test_the_rare_paths_load_only_when_they_come() -> None:
    """Every phase of an update loaded, and still neither the leftovers' healing nor the
    updater's receipts: they load when a leftover is dropped or a stash is found."""
    code = (
        "import sys\nimport patchkeeper.commands.update\n"
        "from patchkeeper.update.run import _load_later_phases\n_load_later_phases()\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    modules = set(proc.stdout.split())
    assert "patchkeeper.update.left_behind" in modules
    assert not {"patchkeeper.leftovers.heal", "patchkeeper.leftovers.receipts"} & modules


def test_a_later_phase_that_cannot_load_fails_the_update_before_anything_changes(
    tmp_path: Path,
) -> None:
    """A patchkeeper whose phase 7 module cannot be imported (a file lost in a half-done
    upgrade or a broken wheel, copied here and broken on purpose): the update must fail before
    the updater runs, the install as it was, not half-way with its patches out."""
    copy = tmp_path / "code"
    shutil.copytree(Path(patching.__file__).parents[1], copy / "patchkeeper",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    restore = copy / "patchkeeper" / "update" / "restore.py"
    text = restore.read_text()
    future = "from __future__ import annotations\n"
    restore.write_text(text.replace(future, future + "raise ImportError('lost in an upgrade')\n"))
    _, install, patches = setup(tmp_path)
    assert pk("apply", "--install", install, "--patches", patches).returncode == 0
    head = git(install, "rev-parse", "HEAD")
    proc = subprocess.run(  # from TMP_PATH: `-m` puts the current folder first on sys.path
        [sys.executable, "-m", "patchkeeper", "update", "--install", install, "--patches", patches],
        capture_output=True, text=True, check=False, cwd=tmp_path,
        env={**os.environ, **GIT_ID, "NO_COLOR": "1", "PYTHONPATH": str(copy)},
    )  # fmt: skip
    assert proc.returncode == 1 and "lost in an upgrade" in proc.stderr, proc.stderr
    assert git(install, "rev-parse", "HEAD") == head
    assert "f0 20 fixed" in (install / "f0.py").read_text()  # the patch still in place
    assert not (install / ".git" / "patchkeeper" / "journal.json").exists()
