"""A patch set tells the truth about itself (issue 14, items 6, 9 and 10).

apply proves what it wrote; a `Smoke:` name with no check behind it is a lint error and
"could not check" everywhere else, never a silent pass; lint and doctor judge the same set
every other command uses, and say which. Real git repositories and the CLI as a subprocess.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest
from helpers import diff_of, git, make_repo, patch_text, write_patch_set
from test_patch_set_choice import pk  # the CLI, with PATCHKEEPER_PATCHES only when given

LINES = "".join(f"line {n}\n" for n in range(1, 21))
PASSING_CHECK = (
    "import json\nprint(json.dumps({'check': 'proof', 'verdict': 'pass', 'steps': []}))\n"
)


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """An install and a set whose one patch names the check `proof` (smoke/proof.py)."""
    upstream = make_repo(tmp_path / "upstream", {"app.py": LINES}, tag="v1.0")
    install = tmp_path / "install"
    git(tmp_path, "clone", "-q", str(upstream), str(install))
    fix = patch_text(diff_of(install, {"app.py": LINES.replace("line 3\n", "fixed\n")}),
                     smoke="proof")  # fmt: skip
    config = f'[install]\npython = "{sys.executable}"\n'
    patches = write_patch_set(tmp_path / "patches", {"fix.patch": fix}, config)
    (patches / "smoke").mkdir()
    (patches / "smoke" / "proof.py").write_text(PASSING_CHECK)
    return install, patches


# ---------------------------------------------------------------- item 9: dangling Smoke


def test_a_smoke_name_without_a_check_is_a_lint_error(world) -> None:
    _, patches = world
    assert pk("lint", "--patches", patches).returncode == 0
    (patches / "smoke" / "proof.py").unlink()
    proc = pk("lint", "--patches", patches)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{patches / 'fix.patch'}:2: Smoke 'proof': no check named proof" in proc.stdout


@pytest.mark.parametrize("verb", ["smoke", "apply"])
def test_smoke_and_apply_say_could_not_check_for_a_dangling_name(world, verb: str) -> None:
    install, patches = world
    (patches / "smoke" / "proof.py").unlink()
    proc = pk(verb, "--install", install, "--patches", patches, "--json")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    document = json.loads(proc.stdout)
    [check] = document["smoke"]["checks"] if verb == "apply" else document["checks"]
    assert check["name"] == "proof" and check["verdict"] == "error"
    assert check["detail"].startswith("could not check: no check named proof")


# ---------------------------------------------------------------- item 6: apply proves


def test_apply_runs_the_checks_of_what_it_wrote_and_names_unapply(world) -> None:
    install, patches = world
    (patches / "smoke" / "proof.py").write_text(PASSING_CHECK.replace("'pass'", "'fail'"))
    proc = pk("apply", "--install", install, "--patches", patches)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "fixed\n" in (install / "app.py").read_text(), "kept in place by choice"
    unapply = f"patchkeeper unapply fix --install {install} --patches {patches}"
    assert f"note: fix is in place but not proven (proof failed); take it out with {unapply}" in (
        proc.stdout
    )
    assert "smoke: fail (proof fail)" in proc.stdout
    # Issue 26 item 7: the second apply wrote nothing and said 0 ("nothing to prove"), and
    # status said 0, while the fix's check had never passed. Both say so until it passes.
    status = pk("status", "--install", install, "--patches", patches)
    assert status.returncode == 4, status.stdout + status.stderr
    assert "fix is in place but not proven: its smoke check proof failed at its last run" in (
        status.stdout
    )
    again = pk("apply", "--install", install, "--patches", patches, "--json")
    assert again.returncode == 4, "the check of a fix never proven runs again"
    assert json.loads(again.stdout)["smoke"]["status"] == "fail"
    (patches / "smoke" / "proof.py").write_text(PASSING_CHECK)
    proven = pk("apply", "--install", install, "--patches", patches, "--json")
    assert proven.returncode == 0, proven.stdout
    assert json.loads(proven.stdout)["smoke"]["status"] == "pass"
    assert pk("status", "--install", install, "--patches", patches).returncode == 0
    last = pk("apply", "--install", install, "--patches", patches, "--json")
    assert last.returncode == 0 and json.loads(last.stdout)["smoke"]["status"] == "not-configured"


def test_apply_no_smoke_says_the_fix_is_not_proven(world) -> None:
    install, patches = world
    (patches / "smoke" / "proof.py").write_text("raise SystemExit(3)\n")
    proc = pk("apply", "--install", install, "--patches", patches, "--no-smoke", "--json")
    assert proc.returncode == 5, proc.stdout + proc.stderr  # in place, not proven: not green
    assert "written, not proven: --no-smoke" in json.loads(proc.stdout)["notes"]
    proof = json.loads(proc.stdout)["smoke"]
    assert proof["status"] == "skipped" and "not proven" in proof["detail"]
    assert proof["checks"] == []
    # Issue 26 item 7: status said 0 after it, and so did a second apply.
    status = pk("status", "--install", install, "--patches", patches)
    assert status.returncode == 5, status.stdout + status.stderr
    apply = f"patchkeeper apply --install {install} --patches {patches}"
    assert (
        "note: fix is in place but not proven: its smoke check proof has not passed since it "
        f"was written; prove it with: {apply}"
    ) in status.stdout
    again = pk("apply", "--install", install, "--patches", patches, "--no-smoke")
    assert again.returncode == 5, again.stdout + again.stderr
    (patches / "smoke" / "proof.py").write_text(PASSING_CHECK)
    assert pk("apply", "--install", install, "--patches", patches).returncode == 0
    assert pk("status", "--install", install, "--patches", patches).returncode == 0


def test_apply_killed_in_its_smoke_check_leaves_the_fix_unproven(world) -> None:
    """Issue 26 item 7: an apply killed while its check ran left a record that status took
    for proof (0). The check here kills its apply (the parent of its process group leader's
    parent: patchkeeper starts each check itself) and never prints a verdict."""
    install, patches = world
    (patches / "smoke" / "proof.py").write_text(
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
    )
    killed = pk("apply", "--install", install, "--patches", patches)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    status = pk("status", "--install", install, "--patches", patches)
    assert "fixed\n" in (install / "app.py").read_text()
    assert status.returncode == 5, status.stdout + status.stderr
    assert "its smoke check proof has not passed since it was written" in status.stdout


def test_apply_that_passes_its_check_exits_0(world) -> None:
    install, patches = world
    proc = pk("apply", "--install", install, "--patches", patches, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    document = json.loads(proc.stdout)
    assert document["smoke"]["status"] == "pass"
    assert [c["name"] for c in document["smoke"]["checks"]] == ["proof"]


# ---------------------------------------------------------------- item 10: one choice


def test_lint_and_doctor_judge_the_set_of_the_environment(world, tmp_path: Path) -> None:
    install, _ = world
    into_git = (
        "Description: writes into .git\n---\ndiff --git a/.git/config b/.git/config\n"
        "--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-a\n+b\n"
    )
    broken = write_patch_set(tmp_path / "broken", {"bad.patch": into_git})
    env = {"PATCHKEEPER_PATCHES": str(broken)}
    lint = pk("lint", env=env)
    assert lint.returncode == 2, lint.stdout + lint.stderr
    assert f"{broken} (PATCHKEEPER_PATCHES): 1 patch(es), " in lint.stderr
    doctor = pk("doctor", "--install", install, "--json", env=env)
    [finding] = [f for f in json.loads(doctor.stdout)["findings"] if f["name"] == "patch set"]
    assert finding["summary"].startswith(f"{broken} (PATCHKEEPER_PATCHES): ")
    assert not finding["ok"]


def test_lint_and_doctor_judge_the_set_the_install_was_applied_from(world) -> None:
    install, patches = world
    applied = pk("apply", "--install", install, "--patches", patches)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    remembered = f"{patches} (the set this install was last applied from)"
    lint = pk("lint", "--install", install, "--json")
    assert json.loads(lint.stdout)["patch_set"] == remembered
    doctor = pk("doctor", "--install", install, "--json")
    [finding] = [f for f in json.loads(doctor.stdout)["findings"] if f["name"] == "patch set"]
    assert finding["summary"] == f"{remembered}: 1 patch(es), lints clean"


# ---------------------------------------------------------------- issue 26 item 7: no check


def test_a_fix_no_check_proves_is_not_0_unless_its_patch_says_why(world) -> None:
    """A patch with no smoke check gave apply exit 0 with "smoke: not configured" while exit
    0 means every fix is proven by its check: it is in place and not proven (5), until its
    patch names a check or says why none can (`Smoke: none (WHY)`)."""
    install, patches = world
    fix = patches / "fix.patch"
    fix.write_text(fix.read_text().replace("Smoke: proof\n", ""))
    apply = pk("apply", "--install", install, "--patches", patches)
    assert apply.returncode == 5, apply.stdout + apply.stderr
    said = (
        f"note: fix is in place, but no smoke check proves it: name one in the Smoke: header "
        f"of {fix}, or say why none can: `Smoke: none (WHY)`"
    )
    assert said in apply.stdout and "fixed\n" in (install / "app.py").read_text()
    for verb in ("status", "apply"):
        again = pk(verb, "--install", install, "--patches", patches)
        assert again.returncode == 5 and said in again.stdout, (verb, again.stdout)
    fix.write_text(
        fix.read_text().replace("---\n", "Smoke: none (it only rewords a log line)\n---\n", 1)
    )
    for verb in ("apply", "status"):  # apply first: the patch file changed
        done = pk(verb, "--install", install, "--patches", patches)
        assert done.returncode == 0, (verb, done.stdout)


def test_smoke_none_needs_its_reason(world) -> None:
    _, patches = world
    fix = patches / "fix.patch"
    fix.write_text(fix.read_text().replace("Smoke: proof\n", "Smoke: none\n"))
    lint = pk("lint", "--patches", patches)
    assert lint.returncode == 2, lint.stdout + lint.stderr
    assert f"{fix}:2: Smoke: none needs its reason: `Smoke: none (why no check can prove it)`" in (
        lint.stdout
    )


@pytest.mark.parametrize("header", ["none-yet, proof", "none, proof"])
def test_a_check_list_that_starts_with_none_runs_its_checks(world, header: str) -> None:
    """`Smoke: none-yet, proof` read as `Smoke: none (yet, proof)`: no check ran, and apply
    said exit 0 with "smoke: not configured" while `proof` failed. Only `none` alone or
    followed by its reason says no check can prove the fix; a list names checks."""
    install, patches = world
    (patches / "smoke" / "proof.py").write_text(PASSING_CHECK.replace("'pass'", "'fail'"))
    fix = patches / "fix.patch"
    fix.write_text(fix.read_text().replace("Smoke: proof\n", f"Smoke: {header}\n"))
    apply = pk("apply", "--install", install, "--patches", patches, "--json")
    checks = {c["name"]: c["verdict"] for c in json.loads(apply.stdout)["smoke"]["checks"]}
    assert checks["proof"] == "fail", apply.stdout
    assert apply.returncode == 4, apply.stdout
