"""Hostile and odd input (issue 9): exit 2, one line (control characters escaped), nothing
written, never a hang, a traceback or exit 1."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from patchkeeper.install.plumbing.scratch_index import IndexFolder
from tests.helpers import (
    GIT_ID,
    diff_of,
    git,
    make_repo,
    patch_text,
    run_cli,
    tree_snapshot,
    write_patch_set,
)

LINES = "".join(f"line {n}\n" for n in range(1, 21))
FIXED = LINES.replace("line 5\n", "line 5 fixed\n")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "up", {"app.py": LINES}, tag="v1.0.0")


def good_diff(repo: Path) -> str:
    return diff_of(repo, {"app.py": FIXED})


def cli(*args: str | Path, timeout: float = 60, env: dict[str, str] | None = None):
    """The CLI as a subprocess that may not hang: a run past TIMEOUT fails the test."""
    return subprocess.run(
        [sys.executable, "-m", "patchkeeper", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **GIT_ID, "NO_COLOR": "1", **(env or {})},
        check=False,
    )


def assert_refused(proc: subprocess.CompletedProcess[str], *words: str) -> str:
    """Exit 2 with one line on stderr that says WORDS; no traceback. Returns the line."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def every_command(repo: Path, patches: Path) -> dict[str, list[str | Path]]:
    where: list[str | Path] = ["--install", repo, "--patches", patches]
    return {
        "status": ["status", *where],
        "check": ["check", "--ref", "HEAD", *where],
        "apply": ["apply", *where],
    }


def assert_every_command_refuses(repo: Path, patches: Path, *words: str) -> None:
    before = tree_snapshot(repo)
    for args in every_command(repo, patches).values():
        assert_refused(cli(*args, timeout=30), *words)
        assert tree_snapshot(repo) == before
    lint = cli("lint", "--patches", patches, timeout=30)
    assert lint.returncode == 2 and "Traceback" not in lint.stderr, lint
    assert any(all(w in line for w in words) for line in lint.stdout.splitlines()), lint.stdout


def assert_every_command_marks_invalid(repo: Path, patches: Path, *words: str) -> None:
    """One patch file that cannot be read or is unsafe (issue 17): status, check and apply
    exit 3 with that patch `invalid`, its detail saying WORDS; nothing of it is written (the
    other patches go on); lint lists it as a problem (exit 2)."""
    from patchkeeper.patchset.load import load_patch_set

    patch_set = load_patch_set(patches)
    (bad,) = [p.name for p in patch_set.patches if any(v.invalid for v in p.variants)]
    theirs = {
        path for p in patch_set.patches if p.name != bad for v in p.variants for path in v.files
    }

    def untouched(snapshot: dict[str, bytes]) -> dict[str, bytes]:
        return {k: v for k, v in snapshot.items() if k not in theirs and not k.startswith(".git/")}

    before = untouched(tree_snapshot(repo))
    for command, args in every_command(repo, patches).items():
        proc = cli(*args, "--json", timeout=30)
        assert proc.returncode == 3, (command, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr + proc.stdout
        doc = json.loads(proc.stdout)
        results = doc["targets"][0]["patches"] if command == "check" else doc["patches"]
        (result,) = [r for r in results if r["name"] == bad]
        assert result["outcome"] == "invalid", result
        for word in words:
            assert word in result["detail"], result["detail"]
        assert untouched(tree_snapshot(repo)) == before
    lint = cli("lint", "--patches", patches, timeout=30)
    assert lint.returncode == 2 and "Traceback" not in lint.stderr, lint
    assert any(all(w in line for w in words) for line in lint.stdout.splitlines()), lint.stdout


# ---------------------------------------------------------------- 2. two patches, one name


def test_two_patches_with_one_name_are_refused(repo: Path, tmp_path: Path) -> None:
    diff = good_diff(repo)
    patches = write_patch_set(
        tmp_path / "ps",
        {"schema-once/a.patch": patch_text(diff), "schema-once.patch": patch_text(diff)},
    )
    assert (patches / "series").read_text() == "schema-once\nschema-once.patch\n"
    assert_every_command_refuses(repo, patches, "series", "two patches named 'schema-once'")


# ---------------------------------------------------------------- 3. special files


def test_a_patch_that_is_a_fifo_is_refused_not_waited_on(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"other.patch": patch_text(good_diff(repo))})
    os.mkfifo(patches / "fix.patch")
    (patches / "series").write_text("fix.patch\nother.patch\n")
    assert_every_command_marks_invalid(repo, patches, "fix.patch", "not a regular file")


def test_a_variant_that_is_a_fifo_is_refused(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix/a.patch": patch_text(good_diff(repo))})
    os.mkfifo(patches / "fix" / "b.patch")
    assert_every_command_marks_invalid(repo, patches, "b.patch", "not a regular file")


def test_a_patch_linked_to_dev_zero_is_refused(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"other.patch": patch_text(good_diff(repo))})
    os.symlink("/dev/zero", patches / "fix.patch")
    (patches / "series").write_text("fix.patch\nother.patch\n")
    assert_every_command_marks_invalid(repo, patches, "fix.patch", "not a regular file")


def test_a_config_linked_to_dev_zero_is_refused(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(good_diff(repo))})
    os.symlink("/dev/zero", patches / "patchkeeper.toml")
    assert_every_command_refuses(repo, patches, "patchkeeper.toml", "not a regular file")


def test_a_series_that_is_a_fifo_is_refused(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(good_diff(repo))})
    (patches / "series").unlink()
    os.mkfifo(patches / "series")
    assert_every_command_refuses(repo, patches, "series", "not a regular file")


def test_a_huge_patch_file_is_refused_unread(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(good_diff(repo))})
    with (patches / "fix.patch").open("ab") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse: costs no disk
    assert_every_command_marks_invalid(repo, patches, "fix.patch", "too large")


# ---------------------------------------------------------------- 4. control characters


def test_control_characters_from_a_patch_are_escaped_in_errors(repo: Path, tmp_path: Path) -> None:
    diff = good_diff(repo).replace(" line 4\n", "\x0bline 4\n")
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(diff)})
    proc = cli("apply", "--install", repo, "--patches", patches)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc
    lines = [ln for ln in proc.stdout.splitlines() if not ln.startswith("smoke:")]  # names it too
    (line,) = [line for line in lines if "invalid" in line and "fix" in line]
    assert "\\x0b" in line and "\x0b" not in proc.stdout
    lint = cli("lint", "--patches", patches)
    problems = [line for line in lint.stdout.splitlines() if "fix.patch" in line]
    assert lint.returncode == 2 and len(problems) == 1 and "\\x0b" in problems[0], lint.stdout


def test_a_file_name_with_a_newline_is_escaped(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix/a.patch": patch_text(good_diff(repo))})
    (patches / "fix" / "evil\nname\x1b[31m.patch").write_text(patch_text(good_diff(repo)))
    proc = cli("apply", "--install", repo, "--patches", patches)
    line = assert_refused(proc, "evil\\nname\\x1b[31m.patch")
    assert "\x1b" not in line


def test_lines_a_conflict_shows_from_a_patch_are_escaped(repo: Path, tmp_path: Path) -> None:
    diff = (
        "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n"
        " nowhere\x1b[2J upstream\n-gone\x0b line\n+new line\n"
    )
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(diff)})
    proc = cli("status", "--install", repo, "--patches", patches)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "\x1b" not in proc.stdout and "\x0b" not in proc.stdout
    assert "nowhere\\x1b[2J upstream" in proc.stdout


def test_a_file_name_too_long_for_any_file_system_is_refused(repo: Path, tmp_path: Path) -> None:
    diff = good_diff(repo).replace("app.py", "x" * 300 + ".py")
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(diff)})
    assert_every_command_marks_invalid(repo, patches, "fix.patch", "longer than 255 bytes")


# ---------------------------------------------------------------- 5. symlinks out of the tree


def symlink_diff(repo: Path, name: str, target: str) -> str:
    os.symlink(target, repo / name)
    git(repo, "add", name)
    diff = git(repo, "diff", "--cached") + "\n"
    git(repo, "rm", "-q", "--cached", name)
    (repo / name).unlink()
    return diff


@pytest.mark.parametrize("target", ["/etc/passwd", "../../outside", "sub/../../x"])
def test_a_patch_may_not_create_a_symlink_out_of_the_install(
    target: str, repo: Path, tmp_path: Path
) -> None:
    diff = symlink_diff(repo, "passwd-link", target)
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(diff)})
    assert_every_command_marks_invalid(repo, patches, "fix.patch", "symlink", "outside the install")
    assert not (repo / "passwd-link").is_symlink()


def test_symlinks_inside_the_install_are_fine_and_outside_ones_can_be_allowed(
    repo: Path, tmp_path: Path
) -> None:
    inside = symlink_diff(repo, "app-link.py", "app.py")
    outside = symlink_diff(repo, "passwd-link", "/etc/passwd")
    patches = write_patch_set(
        tmp_path / "ps", {"inside.patch": patch_text(inside), "outside.patch": patch_text(outside)}
    )
    (patches / "patchkeeper.toml").write_text("[patches]\nallow_outside_symlinks = true\n")
    assert cli("lint", "--patches", patches).returncode == 0
    proc = cli("apply", "--install", repo, "--patches", patches)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert os.readlink(repo / "app-link.py") == "app.py"
    assert os.readlink(repo / "passwd-link") == "/etc/passwd"


@pytest.mark.parametrize("case", ["no hunk", "too long", "two lines"])
def test_a_symlink_git_could_not_write_is_refused(case: str, repo: Path, tmp_path: Path) -> None:
    diff = symlink_diff(repo, "link.py", "app.py")
    if case == "no hunk":  # git would make a link with an empty target
        diff = diff.replace("--- /dev/null\n+++ b/link.py\n@@ -0,0 +1 @@\n", "")
        diff = diff.replace("\\ No newline at end of file\n", "")
    elif case == "too long":
        diff = diff.replace("+app.py", "+" + "y" * 5000)
    else:
        diff = diff.replace("@@ -0,0 +1 @@\n+app.py", "@@ -0,0 +1,2 @@\n+app.py\n+more")
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(diff)})
    (patches / "patchkeeper.toml").write_text("[patches]\nallow_outside_symlinks = true\n")
    assert_every_command_marks_invalid(repo, patches, "fix.patch", "'link.py': a symlink")
    assert not (repo / "link.py").is_symlink()


# ---------------------------------------------------------------- 6. Smoke names


@pytest.mark.parametrize("name", ["../../x", "/tmp/x", "sub/x"])
def test_a_smoke_name_that_is_a_path_is_refused(name: str, repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(
        tmp_path / "ps", {"fix.patch": patch_text(good_diff(repo), smoke=name)}
    )
    assert_every_command_marks_invalid(repo, patches, "fix.patch", "Smoke", repr(name))


def test_a_smoke_check_in_the_config_that_is_a_path_is_refused(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(good_diff(repo))})
    (patches / "patchkeeper.toml").write_text('[smoke]\nchecks = ["../../x"]\n')
    assert_every_command_refuses(repo, patches, "patchkeeper.toml", "smoke.checks", "'../../x'")


# ---------------------------------------------------------------- 7. CRLF


def test_a_crlf_mangled_patch_is_invalid_with_a_hint(repo: Path, tmp_path: Path) -> None:
    text = patch_text(good_diff(repo)).replace("\n", "\r\n")
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": text})
    assert_every_command_marks_invalid(repo, patches, "fix.patch", "invalid", "CRLF", "dos2unix")


def test_a_patch_of_a_crlf_file_is_not_mangled(tmp_path: Path) -> None:
    """Content lines of a file with CRLF endings end in CR; the diff's own lines do not."""
    crlf = LINES.replace("\n", "\r\n")
    repo = make_repo(tmp_path / "up", {"dos.txt": crlf})
    (repo / "dos.txt").write_bytes(crlf.replace("line 5\r\n", "line five\r\n").encode())
    diff = subprocess.run(["git", "diff"], cwd=repo, capture_output=True, check=True).stdout
    git(repo, "checkout", "--", "dos.txt")
    patches = write_patch_set(tmp_path / "ps", {})
    (patches / "fix.patch").write_bytes(
        b"Description: CRLF content\nSmoke: none (a test fixture)\n---\n" + diff
    )
    (patches / "series").write_text("fix.patch\n")
    assert cli("lint", "--patches", patches).returncode == 0
    proc = cli("apply", "--install", repo, "--patches", patches)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert b"line five\r\n" in (repo / "dos.txt").read_bytes()


# ---------------------------------------------------------------- 8. printed commands


def test_a_printed_undo_command_is_shell_quoted(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "my install", {"app.py": LINES}, tag="v1.0.0")
    patches = write_patch_set(tmp_path / "ps", {})
    (repo / "app.py").write_text(FIXED)
    message = "hermes-update-autostash-1 $(touch PWNED) `touch PWNED2` 'q' \"d\" \\ x"
    git(repo, "stash", "push", "-q", "-m", message)
    listing = json.loads(run_cli("leftovers", "--install", repo, "--patches", patches,
                                 "--json").stdout)  # fmt: skip
    (item,) = listing["leftovers"]
    proc = run_cli("leftovers", "drop", item["id"], "--install", repo, "--patches", patches,
                   "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    undo = json.loads(proc.stdout)["undo"]
    assert shlex.split(undo)[:4] == ["git", "-C", str(repo), "stash"]
    subprocess.run(undo, shell=True, check=True, cwd=tmp_path, env={**os.environ, **GIT_ID})
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "PWNED2").exists()
    assert git(repo, "stash", "list", "--format=%gs") == f"On main: {message}"


# ---------------------------------------------------------------- 9. smoke scratch folders


SLOW_CHECK = """\
import sys, time
print("progress: started", file=sys.stderr, flush=True)
time.sleep(60)
"""


def test_a_killed_smoke_run_leaves_nothing_in_tmpdir(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(good_diff(repo))})
    (patches / "smoke").mkdir()
    (patches / "smoke" / "slow.py").write_text(SLOW_CHECK)
    (patches / "patchkeeper.toml").write_text(f'[install]\npython = "{sys.executable}"\n')
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {**os.environ, **GIT_ID, "TMPDIR": str(tmpdir)}
    args = ["smoke", "--install", repo, "--patches", patches]
    proc = subprocess.Popen([sys.executable, "-m", "patchkeeper", *map(str, args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert proc.stderr is not None
    for _ in range(200):
        if b"started" in proc.stderr.readline():
            break
    proc.send_signal(signal.SIGKILL)  # no cleanup of its own can run
    proc.wait()
    proc.stderr.close()
    assert proc.stdout is not None
    proc.stdout.close()
    assert [p.name for p in tmpdir.iterdir()] == []
    scratch = repo / ".git" / "patchkeeper" / "smoke"
    left = list(scratch.iterdir())
    assert len(left) == 1  # the dead run's folder, in the install's state
    for line in Path("/proc").glob("[0-9]*/cmdline"):  # end the orphaned check ourselves
        try:
            if str(patches / "smoke" / "slow.py") in line.read_bytes().decode(errors="replace"):
                os.kill(int(line.parent.name), signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.2)
    (patches / "smoke" / "slow.py").write_text('print(\'{"verdict": "pass"}\')\n')
    again = cli(*args, env={"TMPDIR": str(tmpdir)})
    assert again.returncode == 0, again.stdout + again.stderr
    assert list(scratch.iterdir()) == [] and list(tmpdir.iterdir()) == []


def test_a_relative_tmpdir_holds_the_scratch_index_and_keeps_nothing(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git runs in the install, not where patchkeeper started: a relative TMPDIR is taken
    from patchkeeper's own folder, and the scratch folder goes when the check is done."""
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(good_diff(repo))})
    (tmp_path / "tmp").mkdir()
    monkeypatch.chdir(tmp_path)
    proc = cli("check", "--ref", "v1.0.0", "--install", repo, "--patches", patches,
               env={"TMPDIR": "tmp"})  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "applied" in proc.stdout
    assert list((tmp_path / "tmp").iterdir()) == []
    assert git(repo, "status", "--porcelain", "--ignored") == ""


@pytest.mark.parametrize("variable", ["TEMP", "TMP"])
def test_the_scratch_folder_goes_where_tempfile_would_put_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    """TMPDIR unset, TEMP or TMP names the folder (as for tempfile, which the scratch folder
    used before); a TMPDIR that takes none is passed over."""
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.delenv("TEMP", raising=False)
    monkeypatch.delenv("TMP", raising=False)
    monkeypatch.setenv(variable, str(tmp_path))
    scratch = IndexFolder()
    assert scratch.path.parent == tmp_path
    scratch.close()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "not there"))
    scratch = IndexFolder()
    assert scratch.path.parent == tmp_path
    scratch.close()
    assert list(tmp_path.iterdir()) == []


def test_a_symlink_to_a_folder_in_the_scratch_folder_is_unlinked_not_a_traceback(
    tmp_path: Path,
) -> None:
    """Issue 26 item 11: the removal rmdir'ed a symlink to a folder (ENOTDIR, a traceback
    from a finalizer); it is unlinked, and what it points at is left alone."""
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "file").write_text("mine\n")
    scratch = IndexFolder()
    os.symlink(kept, scratch.path / "link")
    scratch.close()
    assert not scratch.path.exists() and (kept / "file").read_text() == "mine\n"


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace to refuse rmdir")
@pytest.mark.parametrize("verb", ["status", "apply", "check"])
def test_a_temporary_folder_that_cannot_be_removed_is_one_warning_and_changes_no_exit(
    verb: str, repo: Path, tmp_path: Path
) -> None:
    """Issue 26 item 11: a scratch folder the machine would not let go (every rmdir refused,
    EACCES, by strace's fault injection: the same for root and any user) printed a Python
    traceback while the command went on to exit 0, where another command said 7. It is a
    temporary folder, nothing of the user's: one warning line naming it, and the exit code
    the command gives when the folder goes."""
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(good_diff(repo))})
    temp = tmp_path / "tmp"
    temp.mkdir()
    args = (verb, "--install", repo, "--patches", patches, *(["--ref", "HEAD"] * (verb == "check")))
    expected = cli(*args, env={"TMPDIR": str(temp)})
    git(repo, "checkout", "-q", ".")  # apply wrote the fix: the second run starts alike
    (repo / ".git" / "patchkeeper" / "applied.json").unlink(missing_ok=True)
    refused = subprocess.run(
        ["strace", "-f", "-o", os.devnull, "-e", "trace=rmdir", "-e", "inject=rmdir:error=EACCES",
         sys.executable, "-m", "patchkeeper", *map(str, args)],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, **GIT_ID, "NO_COLOR": "1", "TMPDIR": str(temp)},
    )  # fmt: skip
    assert refused.returncode == expected.returncode, (refused.stdout, refused.stderr)
    assert "Traceback" not in refused.stderr and "Exception ignored" not in refused.stderr
    warnings = [line for line in refused.stderr.splitlines() if "warning:" in line]
    leftover = sorted(temp.iterdir())
    assert leftover and len(warnings) >= 1, refused.stderr
    assert all(
        line.startswith("patchkeeper: warning: could not remove the temporary folder ")
        and "(Permission denied" in line
        and line.endswith("it holds nothing of yours: remove it by hand")
        for line in warnings
    ), warnings
    assert f"folder {leftover[0]} " in "\n".join(warnings)


# ---------------------------------------------------------------- 11. help says what runs


def test_doctor_help_says_it_runs_the_smoke_probes() -> None:
    text = " ".join(run_cli("doctor", "--help").stdout.split())
    assert "Reads only" not in text
    assert "every smoke check" in text and "--probe" in text
    assert "version_command" in text


@pytest.mark.parametrize("command", ["status", "apply", "unapply", "record", "refresh", "update"])
def test_help_says_version_command_runs(command: str) -> None:
    text = " ".join(run_cli(command, "--help").stdout.split())
    assert "runs [install] version_command" in text, text


# ---------------------------------------------------------------- 14. plain quilt patches


QUILT = """\
Description: Fix line 5
Origin: vendor
Forwarded: no
Smoke: none (a test fixture)

Index: app/app.py
===================================================================
--- app.orig/app.py\t2026-01-01 00:00:00.000000000 +0000
+++ app/app.py\t2026-01-01 00:00:00.000000000 +0000
@@ -2,7 +2,7 @@
 line 2
 line 3
 line 4
-line 5
+line 5 fixed
 line 6
 line 7
 line 8
--- /dev/null
+++ b/notes/NEW.txt
@@ -0,0 +1,2 @@
+a new file
+from a quilt patch
"""


def test_a_plain_quilt_patch_is_accepted(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": QUILT})
    lint = cli("lint", "--patches", patches)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    proc = cli("apply", "--install", repo, "--patches", patches, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [p["outcome"] for p in json.loads(proc.stdout)["patches"]] == ["applied"]
    assert (repo / "app.py").read_text() == FIXED
    assert (repo / "notes" / "NEW.txt").read_text() == "a new file\nfrom a quilt patch\n"
    assert cli("status", "--install", repo, "--patches", patches).returncode == 0
    assert cli("unapply", "--install", repo, "--patches", patches).returncode == 0
    assert (repo / "app.py").read_text() == LINES and not (repo / "notes").exists()


def test_a_quilt_patch_after_a_dep3_separator(repo: Path, tmp_path: Path) -> None:
    text = (
        "Description: Fix line 5\nSmoke: none (a fixture)\n---\n"
        + good_diff(repo).split("\n", 2)[2]
    )  # no diff --git
    assert "diff --git" not in text
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": text})
    proc = cli("apply", "--install", repo, "--patches", patches)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (repo / "app.py").read_text() == FIXED
