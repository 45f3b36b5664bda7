"""Which patch set a run uses, and a different set never strips applied fixes (issue 8, case 1).

Order: --patches, then PATCHKEEPER_PATCHES, then the set the install was last applied from,
then the bundled one; every report names the set and why. Real git repositories and the CLI
as a subprocess.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import (
    GIT_ID,
    diff_of,
    git,
    make_repo,
    outcomes,
    patch_text,
    tree_snapshot,
    write_patch_set,
)

from patchkeeper.patchset.bundled import bundled_patches

LINES = "".join(f"line {n}\n" for n in range(1, 21))


def pk(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k != "PATCHKEEPER_PATCHES"}
    return subprocess.run(
        [sys.executable, "-m", "patchkeeper", *map(str, args)],
        capture_output=True,
        text=True,
        env={**clean, **GIT_ID, "NO_COLOR": "1", **(env or {})},
        check=False,
    )


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path, Path]:
    """An install, set A with `fix` and `other`, set B with only `other`."""
    upstream = make_repo(tmp_path / "upstream", {"app.py": LINES, "b.py": LINES}, tag="v1.0")
    install = tmp_path / "install"
    git(tmp_path, "clone", "-q", str(upstream), str(install))
    fix = patch_text(diff_of(install, {"app.py": LINES.replace("line 3\n", "fixed\n")}))
    other = patch_text(diff_of(install, {"b.py": LINES.replace("line 9\n", "other\n")}))
    set_a = write_patch_set(tmp_path / "set A", {"fix.patch": fix, "other.patch": other})
    set_b = write_patch_set(tmp_path / "set-b", {"other.patch": other})
    applied = pk("apply", "--install", install, "--patches", set_a)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    return install, set_a, set_b


def status_json(*args: str | Path, env: dict[str, str] | None = None) -> tuple[int, dict]:
    proc = pk("status", "--json", *args, env=env)
    return proc.returncode, json.loads(proc.stdout)


def test_without_patches_the_install_uses_the_set_it_was_applied_from(world) -> None:
    install, set_a, _ = world
    code, document = status_json("--install", install)
    assert code == 0, document
    assert document["patch_set"] == f"{set_a} (the set this install was last applied from)"
    assert outcomes(document) == {"fix": "already-applied", "other": "already-applied"}
    text = pk("status", "--install", install)
    assert f"  set      {set_a} (the set this install was last applied from)" in text.stdout


def test_the_environment_comes_before_the_remembered_set(world) -> None:
    install, _, set_b = world
    code, document = status_json("--install", install, env={"PATCHKEEPER_PATCHES": str(set_b)})
    assert document["patch_set"] == f"{set_b} (PATCHKEEPER_PATCHES)"
    assert code == 5, "set B lacks an applied fix: not green"
    assert any("does not hold fix" in note for note in document["notes"])


def test_a_set_without_an_applied_fix_is_refused_and_retiring_is_explicit(world) -> None:
    install, _, set_b = world
    before = tree_snapshot(install)
    for verb in ("apply", "update"):
        proc = pk(verb, "--install", install, "--patches", set_b)
        assert proc.returncode == 5, proc.stdout + proc.stderr
        [line] = proc.stderr.strip().splitlines()
        assert "does not hold fix" in line and "it would take them out" in line
        assert tree_snapshot(install) == before, f"{verb} changed the install"

    retire = line.rsplit("retire one explicitly: ", 1)[1]
    argv = shlex.split(retire)
    assert argv[:3] == ["patchkeeper", "unapply", "fix"]
    assert pk(*argv[1:]).returncode == 0
    assert "line 3\n" in (install / "app.py").read_text(), "fix is out: retired on purpose"
    proc = pk("apply", "--install", install, "--patches", set_b)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_remembered_set_that_is_gone_is_a_one_line_error(world) -> None:
    install, set_a, _ = world
    set_a.rename(set_a.with_name("moved"))
    proc = pk("status", "--install", install)
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert str(set_a) in line and "pass --patches" in line


def test_with_nothing_remembered_the_bundled_set_is_used(tmp_path: Path) -> None:
    install = make_repo(tmp_path / "install", {"app.py": LINES})
    code, document = status_json("--install", install)
    assert document["patch_set"] == (
        f"{bundled_patches()} (bundled: no --patches, no PATCHKEEPER_PATCHES, none remembered)"
    )
    # No Hermes version file and no tag here: never green. A fix whose variants are chosen by
    # content is tried with each (none fits this tree: a conflict), the others are undecided.
    by_content = {"adoption-retry"}
    patches = {p["name"]: p for p in document["patches"]}
    assert code == 3, document
    for name in by_content:
        assert patches[name]["outcome"] == "conflict"
        assert patches[name]["variant_choice"]["version_known"] is False
    assert all(p["undecided"] for n, p in patches.items() if n not in by_content)


def test_record_refuses_the_bundled_set_an_install_remembers(tmp_path: Path) -> None:
    """An install applied with no set named remembers the bundled set; in a source checkout
    that is its `patches/`, and `record` with no set named wrote the operator's patch there
    (is_packaged knows only the wheel's copy). The file is unchanged, so nothing would be
    recorded either way: the refusal has to come first."""
    install = make_repo(tmp_path / "install", {"app.py": LINES})
    state = install / ".git" / "patchkeeper"
    state.mkdir(parents=True)
    document = {"path": str(bundled_patches()), "digest": "0" * 64}
    (state / "patch-set.json").write_text(json.dumps(document))
    before = tree_snapshot(bundled_patches())
    proc = pk("record", "mine", "--install", install, "--path", "app.py", "-m", "Mine")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "will not write into the bundled patch set" in proc.stderr, proc.stderr
    assert "patchkeeper init" in proc.stderr and proc.stderr.count("\n") == 1
    assert tree_snapshot(bundled_patches()) == before
    proc = pk("refresh", "schema-once", "--install", install)
    assert proc.returncode == 2 and "patchkeeper init" in proc.stderr, proc.stderr
