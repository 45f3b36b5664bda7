"""`refresh` after a hand fix of a conflicting patch keeps what the hand fix did not touch.

A patch that conflicts writes nothing, so the files it creates (schema-once's module
cron/ledger_schema_once.py) are not in the tree when the operator fixes the conflicting
lines by hand. Taken from the tree alone, the refreshed patch would lose them and still be
reported in place; instead they are kept as the patch has them, and written, so the fix is
whole in the patch file and in the tree.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from patchkeeper.demo.sandbox import Sandbox
from tests.helpers import (
    commit_files,
    diff_of,
    git,
    make_repo,
    patch_text,
    run_cli,
    write_patch_set,
)
from tests.test_update import outcomes_of, pk, pk_json, quiet

MODULE = "cron/ledger_schema_once.py"
HOOK = "    _ensure_cron_dir(path.parent)\n"


def added_lines(patch: Path, path: str) -> list[str]:
    """The lines PATCH adds to PATH (a file it creates: its whole content)."""
    section = patch.read_text().split(f"diff --git a/{path} b/{path}\n", 1)[1]
    section = section.split("\ndiff --git ", 1)[0]
    return [line[1:] for line in section.splitlines() if line.startswith("+") and line[:3] != "+++"]


def hand_fix(install: Path) -> None:
    """What the operator does about the conflict: the patch's two lines in the new code."""
    executions = install / "cron/executions.py"
    text = executions.read_text()
    text = text.replace(
        "    from hermes_cli.sqlite_util import open_db\n",
        "    from hermes_cli.sqlite_util import open_db\n"
        "    from cron.ledger_schema_once import once_per_database\n",
    )
    text = text.replace(
        "initialize=_initialize_schema)", "initialize=once_per_database(_initialize_schema))"
    )
    executions.write_text(text)


def test_refresh_keeps_the_module_a_conflicting_patch_creates(sandbox: Sandbox) -> None:
    box = quiet(sandbox)
    patch = box.patches / "schema-once.patch"
    module = added_lines(patch, MODULE)
    assert len(module) > 30
    executions = box.install / "cron/executions.py"  # upstream changes the hunk's context
    moved = executions.read_text().replace(HOOK, HOOK.rstrip("\n") + "  # upstream: first\n")
    commit_files(box.install, {"cron/executions.py": moved}, "upstream moves the hook")
    code, doc = pk_json(box, "apply")
    assert code == 3 and outcomes_of(doc)["schema-once"] == "conflict", doc
    assert not (box.install / MODULE).exists()
    hand_fix(box.install)

    proc = pk(box, "refresh", "schema-once")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert added_lines(patch, MODULE) == module  # the patch keeps its module
    assert "+    from cron.ledger_schema_once import once_per_database" in patch.read_text()
    assert (box.install / MODULE).read_text().splitlines() == module  # and it is in the tree
    assert MODULE in proc.stdout  # said
    imported = subprocess.run(
        [sys.executable, "-c", "import cron.ledger_schema_once, cron.executions"],
        cwd=box.install,
        capture_output=True,
        text=True,
        check=False,
    )
    assert imported.returncode == 0, imported.stderr
    code, doc = pk_json(box, "status")
    assert code == 0, doc
    assert run_cli("lint", "--patches", box.patches).returncode == 0
    # and the refreshed patch is the whole fix: taken out, the tree is upstream's again
    assert pk(box, "unapply").returncode == 0
    assert executions.read_text() == moved and not (box.install / MODULE).exists()
    assert git(box.install, "status", "--porcelain") == ""


def test_a_kept_part_that_no_longer_applies_is_refused_and_nothing_written(
    tmp_path: Path,
) -> None:
    """Two files, both changed by upstream, only one fixed by hand: refresh cannot keep the
    other's lines (they no longer apply), so it writes nothing and says which file."""
    lines = "".join(f"line {n}\n" for n in range(1, 21))
    repo = make_repo(tmp_path / "up", {"a.py": lines, "b.py": lines}, tag="v1.0.0")
    fixed = lines.replace("line 10\n", "line 10 fixed\n")
    diff = diff_of(repo, {"a.py": fixed, "b.py": fixed})
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(diff)})
    moved = lines.replace("line 10\n", "line 10 upstream\n")
    commit_files(repo, {"a.py": moved, "b.py": moved}, "upstream moved", tag="v1.1.0")
    assert run_cli("apply", "--install", repo, "--patches", patches).returncode == 3
    (repo / "a.py").write_text(moved.replace("line 10 upstream\n", "line 10 fixed again\n"))
    before = (patches / "fix.patch").read_bytes()

    proc = run_cli("refresh", "fix", "--install", repo, "--patches", patches)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "b.py" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert (patches / "fix.patch").read_bytes() == before
    assert (repo / "b.py").read_text() == moved


def test_refresh_leaves_out_an_edit_of_yours_elsewhere_in_the_file_and_unapply_keeps_it(
    tmp_path: Path,
) -> None:
    """Issue 26 item 8: the operator reworks the fix at line 10 and, for reasons of their own,
    adds a line after line 23 of the same file (between the patch's two hunks). refresh took
    it into the patch, and a later unapply (exit 0) deleted the operator's line. The patch
    takes only its own hunks; the new line 24 is named as left out and stays the operator's,
    through unapply too."""
    lines = "".join(f"line {n}\n" for n in range(1, 41))
    repo = make_repo(tmp_path / "up", {"app.py": lines}, tag="v1.0.0")
    fixed = lines.replace("line 10\n", "line 10 fixed\n").replace("line 36\n", "line 36 too\n")
    diff = diff_of(repo, {"app.py": fixed})
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(diff)})
    args = ("--install", repo, "--patches", patches)
    assert run_cli("apply", *args).returncode == 0
    app = repo / "app.py"
    reworked = app.read_text().replace("line 10 fixed\n", "line 10 fixed better\n")
    app.write_text(reworked.replace("line 23\n", "line 23\n# the operator's own note\n"))

    proc = run_cli("refresh", "fix", *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        "note: left out app.py:24: an edit there is not part of fix (it changes none of the "
        "patch's lines, away from its hunks); it stays in the work tree as yours (if it is part "
        "of the fix: refresh --whole-files)"
    ) in proc.stdout
    text = (patches / "fix.patch").read_text()
    assert "+line 10 fixed better" in text and "+line 36 too" in text and "operator" not in text
    assert run_cli("status", *args).returncode == 0
    assert run_cli("unapply", *args).returncode == 0
    assert app.read_text() == lines.replace("line 23\n", "line 23\n# the operator's own note\n")


def test_refresh_whole_files_takes_an_edit_away_from_the_hunks(tmp_path: Path) -> None:
    """A fix rewritten away from where the patch had it is the operator's call to take."""
    lines = "".join(f"line {n}\n" for n in range(1, 41))
    repo = make_repo(tmp_path / "up", {"app.py": lines}, tag="v1.0.0")
    diff = diff_of(repo, {"app.py": lines.replace("line 10\n", "line 10 fixed\n")})
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(diff)})
    args = ("--install", repo, "--patches", patches)
    assert run_cli("apply", *args).returncode == 0
    app = repo / "app.py"
    app.write_text(app.read_text().replace("line 30\n", "line 30 also part of the fix\n"))
    proc = run_cli("refresh", "fix", "--whole-files", *args)
    assert proc.returncode == 0 and "left out" not in proc.stdout, proc.stdout + proc.stderr
    assert "+line 30 also part of the fix" in (patches / "fix.patch").read_text()
    assert run_cli("unapply", *args).returncode == 0
    assert app.read_text() == lines
