"""Bad input: one line naming the file and the problem, exit 2, nothing changed on disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import (
    commit_files,
    diff_of,
    git,
    make_repo,
    patch_text,
    run_cli,
    tree_snapshot,
    write_patch_set,
)

LINES = "".join(f"line {n}\n" for n in range(1, 21))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "up", {"app.py": LINES}, tag="v1.0.0")


def good_diff(repo: Path) -> str:
    return diff_of(repo, {"app.py": LINES.replace("line 5\n", "line 5 fixed\n")})


def with_path(diff: str, path: str) -> str:
    return diff.replace("a/app.py", f"a/{path}").replace("b/app.py", f"b/{path}")


BINARY = (
    "diff --git a/logo.png b/logo.png\nnew file mode 100644\nindex 0000000..1111111\n"
    "GIT binary patch\nliteral 4\nLcmZ?wbhEPl\n\nliteral 0\nHcmV?d00001\n"
)

GITLINK = (
    "diff --git a/vendor/lib b/vendor/lib\nnew file mode 160000\nindex 0000000..1234567\n"
    "--- /dev/null\n+++ b/vendor/lib\n@@ -0,0 +1 @@\n"
    "+Subproject commit 1234567890123456789012345678901234567890\n"
)
MODE_ONLY = "diff --git a/app.py b/app.py\nold mode 100644\nnew mode 100755\n"

# name -> (patch set files given the good diff, the file the error must name, words it must say)
CASES: dict[str, tuple[Callable[[str], dict[str, str | bytes]], str, str]] = {
    "duplicate header of our own": (
        lambda d: {"fix.patch": "Applies-To: <2\n" + patch_text(d, applies_to=">=1")},
        "fix.patch",
        "duplicate header 'Applies-To'",
    ),
    "invalid specifier": (
        lambda d: {"fix.patch": patch_text(d, applies_to=">=banana")},
        "fix.patch",
        "invalid PEP 440",
    ),
    "diff does not parse": (
        lambda d: {"fix.patch": patch_text(d.replace("@@ -2,7 +2,7 @@", "@@ -2,9 +2,2 @@"))},
        "fix.patch",
        "diff does not parse",
    ),
    "binary patch": (lambda d: {"fix.patch": patch_text(BINARY)}, "fix.patch", "binary patches"),
    "dot-dot path": (
        lambda d: {"fix.patch": patch_text(with_path(d, "../outside.py"))},
        "fix.patch",
        "leaves the tree",
    ),
    "absolute path": (
        lambda d: {"fix.patch": patch_text(d.replace("--- a/app.py", "--- /etc/passwd"))},
        "fix.patch",
        "absolute path",
    ),
    "plain diff with an absolute path": (  # issue 26 item 12: -p1 made it app.py, applied
        lambda d: {
            "fix.patch": patch_text(
                d.split("\n", 2)[2].replace("--- a/app.py", "--- /app.py")
                .replace("+++ b/app.py", "+++ /app.py")
            )
        },
        "fix.patch",
        "'/app.py': absolute path",
    ),
    "gitlink": (  # issue 26 item 6: was "applied", exit 0, nothing written, then pending
        lambda d: {"fix.patch": patch_text(GITLINK)},
        "fix.patch",
        "a submodule (gitlink, mode 160000)",
    ),
    "setuid mode": (  # issue 26 item 6: written as a plain 100755 and called applied
        lambda d: {"fix.patch": patch_text(MODE_ONLY.replace("100755", "104755"))},
        "fix.patch",
        "mode 104755 is not one git keeps",
    ),
    "mode 100777": (
        lambda d: {"fix.patch": patch_text(MODE_ONLY.replace("100755", "100777"))},
        "fix.patch",
        "mode 100777 is not one git keeps",
    ),
    ".git target": (
        lambda d: {"fix.patch": patch_text(with_path(d, ".git/hooks/pre-commit"))},
        "fix.patch",
        "inside .git/",
    ),
    "missing series entry": (
        lambda d: {"fix.patch": patch_text(d), "series": "fix.patch\ngone.patch\n"},
        "series",
        "does not exist",
    ),
    # issue 26 item 12: each was read as an empty patch, already-applied, exit 0 everywhere
    "series lists itself": (
        lambda d: {"fix.patch": patch_text(d), "series": "fix.patch\nseries\n"},
        "series:2",
        "'series' is the set's own series, not a patch",
    ),
    "series lists patchkeeper.toml": (
        lambda d: {
            "fix.patch": patch_text(d),
            "patchkeeper.toml": "[install]\n",
            "series": "fix.patch\npatchkeeper.toml\n",
        },
        "series:2",
        "'patchkeeper.toml' is the set's own patchkeeper.toml, not a patch",
    ),
    "series lists a smoke check": (
        lambda d: {
            "fix.patch": patch_text(d),
            "smoke/proof.py": "print()\n",
            "series": "fix.patch\nsmoke/proof.py\n",
        },
        "series:2",
        "'smoke/proof.py' is a smoke check, not a patch",
    ),
    "series lists the README": (
        lambda d: {
            "fix.patch": patch_text(d),
            "README.md": "# set\n",
            "series": "fix.patch\nREADME.md\n",
        },
        "series:2",
        "'README.md' is the set's README, not a patch",
    ),
    "overlapping variants": (
        lambda d: {
            "fix/a.patch": patch_text(d, applies_to=">=1.0,<2.0"),
            "fix/b.patch": patch_text(d, applies_to=">=1.5"),
        },
        "b.patch",
        "overlaps",
    ),
    "variants that both claim the version in use": (
        lambda d: {
            "fix/a.patch": patch_text(d, applies_to=">=1.0,<2.0"),
            "fix/b.patch": patch_text(d, applies_to=">=0.9"),
        },
        "b.patch",
        "overlaps variant a.patch (both contain 1",  # lint: the probe 1; apply: 1.0.0, in use
    ),
    "bad config": (
        lambda d: {"fix.patch": patch_text(d), "patchkeeper.toml": "[install]\npath = 3\n"},
        "patchkeeper.toml",
        "must be a string",
    ),
}


def write_set(root: Path, files: dict[str, str | bytes]) -> Path:
    root.mkdir(parents=True)
    series = files.pop("series", None)
    entries = []
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
        if name.endswith(".patch") and name.split("/")[0] not in entries:
            entries.append(name.split("/")[0])
    (root / "series").write_text(series if isinstance(series, str) else "\n".join(entries) + "\n")
    return root


# Problems of the set as a whole (refused by every command that meets them); an overlap of
# ranges away from the version in use, which only lint judges; every other case is one patch
# file that cannot be read or is unsafe: that patch is `invalid` and the others go on (issue 17).
# A byte that is not UTF-8 and a patch file series leaves out are read, with a warning
# (issue 27, tests/test_dialects.py).
SET_CASES = {
    "series lists itself",
    "series lists patchkeeper.toml",
    "series lists a smoke check",
    "series lists the README",
    "missing series entry",
    "variants that both claim the version in use",
    "bad config",
}
LINT_CASES = {"overlapping variants"}
PATCH_CASES = sorted(set(CASES) - SET_CASES - LINT_CASES)


@pytest.mark.parametrize("case", PATCH_CASES)
def test_an_unreadable_or_unsafe_patch_is_invalid_alone_and_written_nowhere(
    case: str, repo: Path, tmp_path: Path
) -> None:
    build, names, says = CASES[case]
    files = build(good_diff(repo))
    other = diff_of(repo, {"other.py": "other\n"})
    patches = write_set(tmp_path / "ps", {**files, "other.patch": patch_text(other)})
    before = tree_snapshot(repo)
    proc = run_cli("apply", "--install", repo, "--patches", patches, "--json")
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    results = {p["name"]: p for p in json.loads(proc.stdout)["patches"]}
    assert results["other"]["outcome"] == "applied"
    bad = results["fix"]
    assert bad["outcome"] == "invalid" and names in bad["detail"] and says in bad["detail"]
    assert bad["detail"].split(":")[1].isdigit()  # FILE:LINE: problem
    after = tree_snapshot(repo)
    assert after.pop("other.py") == b"other\n"
    assert {k: v for k, v in after.items() if not k.startswith(".git/")} == {
        k: v for k, v in before.items() if not k.startswith(".git/")
    }
    assert not (tmp_path / "outside.py").exists() and not (repo / ".git/hooks/pre-commit").exists()


@pytest.mark.parametrize(
    ("command", "case"),
    [("lint", case) for case in sorted(CASES)] + [("apply", case) for case in sorted(SET_CASES)],
)
def test_bad_patch_set_is_one_line_exit_2_nothing_written(
    case: str, command: str, repo: Path, tmp_path: Path
) -> None:
    build, names, says = CASES[case]
    patches = write_set(tmp_path / "ps", build(good_diff(repo)))
    before = tree_snapshot(repo)
    args = (
        ["--patches", patches] if command == "lint" else ["--install", repo, "--patches", patches]
    )
    proc = run_cli(command, *args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    output = proc.stderr if command == "apply" else proc.stdout
    first = output.strip().splitlines()[0]
    assert names in first and says in first, output
    assert "Traceback" not in proc.stderr
    if command == "apply":
        assert len(proc.stderr.strip().splitlines()) == 1
    else:
        assert first.split(":")[1].isdigit()  # FILE:LINE: problem
    assert tree_snapshot(repo) == before


def test_an_overlap_away_from_the_version_in_use_is_judged_by_lint_not_by_every_load(
    repo: Path, tmp_path: Path
) -> None:
    """Issue 20: `a.patch` (>=1.0,<2.0) and `b.patch` (>=1.5) overlap from 1.5, and the install
    is 1.0.0. lint refuses the set; update, which cannot know its next version, refuses it
    before its updater runs, and so do `fleet ready` and recover; apply and check choose
    a.patch for 1.0.0; check of a tag both variants claim refuses that tag's version, naming
    both files."""
    build, _, _ = CASES["overlapping variants"]
    ran = tmp_path / "updater-ran"
    config = f'[update]\ncommand = ["touch", "{ran}"]\n'
    patches = write_set(tmp_path / "ps", {**build(good_diff(repo)), "patchkeeper.toml": config})
    overlap = "b.patch:1: Applies-To overlaps variant a.patch (both contain 1.5)"

    lint = run_cli("lint", "--patches", patches)
    assert lint.returncode == 2 and overlap in lint.stdout, lint.stdout
    before = tree_snapshot(repo)
    update = run_cli("update", "--install", repo, "--patches", patches)
    assert update.returncode == 2 and overlap in update.stderr, (update.stdout, update.stderr)
    assert len(update.stderr.strip().splitlines()) == 1 and "Traceback" not in update.stderr
    assert not ran.exists() and tree_snapshot(repo) == before
    for refusing in (["fleet", "ready"], ["recover"]):  # before an update, and to finish one
        proc = run_cli(*refusing, "--install", repo, "--patches", patches)
        assert proc.returncode == 2 and overlap in proc.stderr, (refusing, proc.stderr)

    check = run_cli("check", "--install", repo, "--patches", patches, "--ref", "v1.0.0", "--json")
    assert check.returncode == 0, (check.stdout, check.stderr)
    apply = run_cli("apply", "--install", repo, "--patches", patches, "--json")
    assert apply.returncode == 0, (apply.stdout, apply.stderr)
    (fix,) = json.loads(apply.stdout)["patches"]
    assert (fix["outcome"], fix["variant"]) == ("applied", "fix/a.patch")

    commit_files(repo, {"other.txt": "x\n"}, "release 1.6", tag="v1.6.0")
    claimed = run_cli("check", "--install", repo, "--patches", patches, "--ref", "v1.6.0")
    assert claimed.returncode == 2, (claimed.stdout, claimed.stderr)
    (line,) = claimed.stderr.strip().splitlines()
    assert "fix/b.patch: Applies-To overlaps variant a.patch (both contain 1.6.0" in line, line


def test_lint_lists_every_problem_with_file_and_line(tmp_path: Path, repo: Path) -> None:
    diff = good_diff(repo)
    patches = write_set(
        tmp_path / "ps",
        {
            "a.patch": "Smoke: ok\n" + patch_text(diff, applies_to="~=bad", smoke="ok"),
            "b.patch": patch_text(with_path(diff, "../x.py")),
        },
    )
    proc = run_cli("lint", "--patches", patches)
    assert proc.returncode == 2
    lines = proc.stdout.strip().splitlines()
    assert any(line.endswith("a.patch:4: duplicate header 'Smoke'") for line in lines)
    assert any("a.patch:3: invalid PEP 440" in line for line in lines)
    assert any("b.patch:" in line and "leaves the tree" in line for line in lines)


def test_symlink_that_leaves_the_tree(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, repo / "linked")
    diff = with_path(good_diff(repo), "linked/app.py")
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(diff)})
    before = tree_snapshot(repo)
    proc = run_cli("apply", "--install", repo, "--patches", patches)
    assert proc.returncode == 2
    assert "fix.patch" in proc.stderr and "outside the install through a symlink" in proc.stderr
    assert tree_snapshot(repo) == before and list(outside.iterdir()) == []


def test_install_that_is_not_a_git_repo(tmp_path: Path, repo: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(good_diff(repo))})
    proc = run_cli("status", "--install", plain, "--patches", patches)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"patchkeeper: error: {plain}: not a git repository"



def test_an_install_that_is_a_git_folder_is_a_user_error_not_a_lost_answer(
    tmp_path: Path, repo: Path
) -> None:
    """`--install REPO/.git`: git answers part and refuses (exit 128, "must be run in a work
    tree"). That was exit 7, "its output was lost", a machine refusal that never happened."""
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(good_diff(repo))})
    proc = run_cli("status", "--install", repo / ".git", "--patches", patches)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (
        f"patchkeeper: error: {repo / '.git'}: not a checkout: "
        "git: this operation must be run in a work tree"
    )

@pytest.mark.parametrize("owner", ["git's test switch", "chown"])
def test_an_install_owned_by_another_user_is_said_as_git_says_it(
    owner: str, tmp_path: Path, repo: Path
) -> None:
    """Issue 26 item 12: git's safe.directory refusal was reported as "a bare repository is
    not an install" (exit 2). Another owner is made for real by chown as root; as any user,
    by git's own GIT_TEST_ASSUME_DIFFERENT_OWNER, which runs the same ownership check."""
    env = {**os.environ, "NO_COLOR": "1"}
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(good_diff(repo))})
    if owner == "chown":
        if os.geteuid() != 0:
            pytest.skip("only root can give the install to another user")
        for path in [repo, *repo.rglob("*")]:
            os.lchown(path, 65534, 65534)
    else:
        env["GIT_TEST_ASSUME_DIFFERENT_OWNER"] = "1"
    for command in ("status", "apply"):
        proc = subprocess.run(
            [sys.executable, "-m", "patchkeeper", command, "--install", repo, "--patches", patches],
            capture_output=True, text=True, env=env, check=False,
        )  # fmt: skip
        assert proc.returncode == 7, (proc.stdout, proc.stderr)
        assert proc.stderr.strip() == (
            f"patchkeeper: error: {repo}: git refuses it: dubious ownership (the repository "
            "belongs to another user); if you trust it: git config --global --add "
            f"safe.directory {repo}"
        )


def test_missing_install(tmp_path: Path, repo: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(good_diff(repo))})
    proc = run_cli("apply", "--install", tmp_path / "nope", "--patches", patches)
    assert proc.returncode == 2 and "install not found" in proc.stderr


@pytest.mark.parametrize("operation", ["merge", "rebase"])
def test_repo_in_the_middle_of_an_operation(operation: str, repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(good_diff(repo))})
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "app.py").write_text(LINES.replace("line 5\n", "side\n"))
    git(repo, "commit", "-qam", "side")
    git(repo, "checkout", "-q", "main")
    (repo / "app.py").write_text(LINES.replace("line 5\n", "main\n"))
    git(repo, "commit", "-qam", "main")
    args = ["merge", "side"] if operation == "merge" else ["rebase", "side"]
    with pytest.raises(subprocess.CalledProcessError):  # git stops on the conflict
        git(repo, *args)
    before = tree_snapshot(repo)
    proc = run_cli("apply", "--install", repo, "--patches", patches)
    assert proc.returncode == 2
    assert f"middle of a {operation}" in proc.stderr or "unmerged paths" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert tree_snapshot(repo) == before


def test_unknown_ref_for_check(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(good_diff(repo))})
    proc = run_cli("check", "--install", repo, "--patches", patches, "--ref", "v9.9.9")
    assert proc.returncode == 2 and "'v9.9.9' names no commit here" in proc.stderr


def test_json_callers_get_an_error_document(tmp_path: Path) -> None:
    proc = run_cli("status", "--install", tmp_path, "--json")
    assert proc.returncode == 2
    document = json.loads(proc.stdout)
    assert document["exit_code"] == 2 and document["command"] == "status"
    assert "not a git repository" in document["error"]


def test_a_damaged_update_journal_is_one_line_not_a_traceback(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(good_diff(repo))})
    journal = repo / ".git/patchkeeper/journal.json"
    journal.parent.mkdir(parents=True)
    fields = {"id": "x", "pid": 1, "started_at": "yesterday", "old_head": "0" * 40,
              "old_version": "1.0.0", "stash_top": None, "phase": 4}  # fmt: skip
    journal.write_text(json.dumps(fields))
    for command in ("recover", "apply", "update"):
        proc = run_cli(command, "--install", repo, "--patches", patches)
        assert proc.returncode == 2, (command, proc.stderr)
        assert proc.stderr.startswith(f"patchkeeper: error: {journal}: the update journal")
        assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_a_timeout_that_could_never_expire_is_refused(
    value: str, repo: Path, tmp_path: Path
) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(good_diff(repo))})
    before = tree_snapshot(repo)
    proc = run_cli("update", "--timeout", value, "--install", repo, "--patches", patches)
    assert proc.returncode == 2 and "finite number of seconds" in proc.stderr
    (patches / "patchkeeper.toml").write_text(f"[update]\ntimeout = {value}\n")
    proc = run_cli("update", "--install", repo, "--patches", patches)
    assert proc.returncode == 2 and "update.timeout must be a positive number" in proc.stderr
    assert tree_snapshot(repo) == before


def test_a_config_that_is_not_a_readable_file_is_an_error(repo: Path, tmp_path: Path) -> None:
    """Never silently fall back to defaults (another install, another update command)."""
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(good_diff(repo))})
    (patches / "patchkeeper.toml").mkdir()
    proc = run_cli("status", "--install", repo, "--patches", patches)
    assert proc.returncode == 2 and "patchkeeper.toml: cannot read" in proc.stderr


def test_junit_into_a_missing_folder_fails_before_any_work(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(good_diff(repo))})
    target = tmp_path / "nowhere" / "x.xml"
    proc = run_cli("check", "--ref", "HEAD", "--junit", target, "--install", repo,
                   "--patches", patches)  # fmt: skip
    assert proc.returncode == 2 and "no such folder for --junit" in proc.stderr


def test_small_usage_mistakes_are_refused(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(good_diff(repo))})
    proc = run_cli("leftovers", "list", "extra", "--install", repo, "--patches", patches)
    assert proc.returncode == 2 and "takes no ID" in proc.stderr
    home = tmp_path / "home"
    (home / "profiles").mkdir(parents=True)
    proc = run_cli("audit", "--home", home, "--profile", "..")
    assert proc.returncode == 2 and "a profile is a name, not a path" in proc.stderr
