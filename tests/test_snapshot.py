"""The work tree's snapshot (install/plumbing/work_tree_snapshot.py): made from the dirty paths
alone, it is the very tree git's own `add -A` of the whole tree makes (trees._whole_tree), in every
state a
work tree can be in; and what it costs does not grow with files nobody touched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from patchkeeper.install.checkout import tree_objects as trees
from patchkeeper.install.checkout.install import open_install
from tests.helpers import GIT_ID, commit_files, git, make_repo

FILES = {
    "README.md": "read me\n",
    "run.sh": "#!/bin/sh\necho run\n",
    "pkg/a.py": "a = 1\n",
    "pkg/b.py": "b = 2\n",
    "pkg/deep/c.py": "c = 3\n",
    "gone/only.py": "only\n",
    "docs/x.md": "x\n",
    ".gitignore": "*.log\nbuild/\n",
}


def _install(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "install", FILES)
    os.chmod(repo / "run.sh", 0o755)
    git(repo, "add", "run.sh")
    git(repo, "commit", "-q", "-m", "executable")
    return repo


def _both(repo: Path, also: tuple[str, ...] = ()) -> tuple[trees.WorktreeState, str]:
    """The snapshot this way, and git's own whole-tree one."""
    install = open_install(repo)
    state = trees.worktree_state(install, also)
    return state, trees._whole_tree(install, list(also))


def _edit(repo: Path, case: str) -> tuple[str, ...]:
    """Put REPO into the state CASE names; returns the paths patchkeeper would name as its own."""
    if case == "modified":
        (repo / "pkg/a.py").write_text("a = 10\n")
        (repo / "pkg/deep/c.py").write_text("c = 30\n")
    elif case == "deleted-and-emptied":
        (repo / "gone/only.py").unlink()
        (repo / "gone").rmdir()
        (repo / "pkg/b.py").unlink()
    elif case == "untracked-in-new-folders":
        (repo / "new/inner").mkdir(parents=True)
        (repo / "new/inner/n.py").write_text("n\n")
        (repo / "top.txt").write_text("top\n")
        (repo / "pkg/deep/z.py").write_text("z\n")
    elif case == "ignored":
        (repo / "debug.log").write_text("ignored\n")
        (repo / "build").mkdir()
        (repo / "build/out.o").write_text("ignored\n")
    elif case == "ignored-but-ours":
        (repo / "pkg/made.log").write_text("a patch created this\n")
        return ("pkg/made.log", "pkg/not-there.log")
    elif case == "staged":
        (repo / "docs/x.md").write_text("staged\n")
        git(repo, "add", "docs/x.md")
        (repo / "docs/x.md").write_text("staged, then edited again\n")
        (repo / "docs/y.md").write_text("staged new\n")
        git(repo, "add", "docs/y.md")
        git(repo, "rm", "-q", "--cached", "README.md")  # staged deletion, still on disk
    elif case == "intent-to-add":
        (repo / "pkg/i.py").write_text("intent\n")
        git(repo, "add", "-N", "pkg/i.py")
    elif case == "modes":
        os.chmod(repo / "run.sh", 0o644)
        os.chmod(repo / "pkg/a.py", 0o755)
        (repo / "tool").write_text("#!/bin/sh\n")
        os.chmod(repo / "tool", 0o755)
    elif case == "symlinks":
        (repo / "pkg/link").symlink_to("a.py")
        (repo / "docs/x.md").unlink()
        (repo / "docs/x.md").symlink_to("../README.md")
    elif case == "file-became-folder":  # whole-tree route
        (repo / "pkg/b.py").unlink()
        (repo / "pkg/b.py").mkdir()
        (repo / "pkg/b.py/inside.py").write_text("inside\n")
    elif case == "folder-became-file":
        (repo / "pkg/deep/c.py").unlink()
        (repo / "pkg/deep").rmdir()
        (repo / "pkg/deep").write_text("a file now\n")
    elif case == "same-size-same-second":  # racily clean: stat data alone cannot tell
        (repo / "pkg/a.py").write_text("a = 9\n")
    return ()


CASES = [
    "clean", "modified", "deleted-and-emptied", "untracked-in-new-folders", "ignored",
    "ignored-but-ours", "staged", "intent-to-add", "modes", "symlinks", "file-became-folder",
    "folder-became-file", "same-size-same-second",
]  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_the_snapshot_is_the_tree_git_add_makes(tmp_path: Path, case: str) -> None:
    repo = _install(tmp_path)
    also = _edit(repo, case)
    state, whole = _both(repo, also)
    assert state.tree == whole
    head_tree = git(repo, "rev-parse", "HEAD^{tree}")
    if state.listed is not None:  # what it says it changed is what git's diff says
        raw = git(repo, "diff-tree", "-r", "--no-renames", head_tree, state.tree)
        said = [line.split("\t") for line in raw.splitlines()]
        assert [(path, *header[1:].split(" ")[:4]) for header, path in said] == state.listed
        assert state.head_tree == head_tree
    staged = subprocess.run(["git", "diff", "--cached", "--quiet"], cwd=repo)  # as before
    assert state.staged == (staged.returncode != 0)
    if case == "file-became-folder":
        assert state.listed is None  # git's own route


def _traced(repo: Path, tmp_path: Path, name: str) -> tuple[list[str], int, int]:
    """What a snapshot of REPO costs, as git counts it: the git processes it starts (their
    arguments), the index entries they write (git's trace2 `write/cache_nr`), and the objects
    written to the store; in a fresh process, as an update makes it."""
    events = tmp_path / f"{name}.json"
    before = int(git(repo, "count-objects").split()[0])
    code = (
        "import sys; from pathlib import Path\n"
        "from patchkeeper.install.checkout import tree_objects\n"
        "from patchkeeper.install.checkout.install import open_install\n"
        "tree_objects.worktree_tree(open_install(Path(sys.argv[1])), ['pkg/made.log'])\n"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(repo)], check=True,
        env={**os.environ, **GIT_ID, "GIT_TRACE2_EVENT": str(events)},
    )  # fmt: skip
    said = [json.loads(line) for line in events.read_text().splitlines()]
    argv = [" ".join(event["argv"][1:]) for event in said if event["event"] == "start"]
    entries = sum(
        int(event["value"]) for event in said
        if event["event"] == "data" and event.get("key") == "write/cache_nr"
    )  # fmt: skip
    return argv[1:], entries, int(git(repo, "count-objects").split()[0]) - before


def test_what_a_snapshot_costs_does_not_grow_with_untouched_files(tmp_path: Path) -> None:
    """The same edits, before and after 5,000 files nobody touches join the tree (in an
    edited folder too): the same git processes, the same index entries written (none: no
    index of the whole tree), the same objects written. The whole-tree route wrote an index
    entry for every file of the tree."""
    repo = _install(tmp_path)

    def edit(round_: int) -> None:
        (repo / "pkg/a.py").write_text(f"a = {round_ + 10}\n")
        (repo / "new").mkdir(exist_ok=True)
        (repo / "new/n.py").write_text(f"n = {round_}\n")
        (repo / "pkg/made.log").write_text(f"ours {round_}\n")  # ignored, but patchkeeper's

    edit(1)
    small = _traced(repo, tmp_path, "small")
    for path in ("pkg/a.py", "new/n.py", "pkg/made.log"):
        (repo / path).unlink()
    many = {f"{'pkg' if n % 2 else 'more'}/f{n}.py": f"{n}\n" for n in range(5000)}
    commit_files(repo, many, "5,000 more files")
    edit(2)
    large = _traced(repo, tmp_path, "large")
    assert large == small
    assert large[1:] == (0, 3 + 3)  # no index entry; 3 blobs, 3 trees (the top, pkg, new)
