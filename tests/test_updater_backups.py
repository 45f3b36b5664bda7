"""`leftovers` and `doctor` know the refs the upstream updater leaves when it moves HEAD.

The refs are made by the sandbox's own `hermes update` (which behaves like the real one of
0.21.3), never written by the test: a release-channel update from a detached HEAD keeps
`refs/hermes/pre-release/<old>`; a same-branch update over history with no common ancestor
keeps `refs/hermes-update-backups/orphan-*`.
"""

from __future__ import annotations

import subprocess

from helpers import git, run_cli, run_json

from patchkeeper.demo.sandbox import INSTALL_TAG, TAGS, Sandbox

# The two releases after the one the install starts at.
NEXT, AFTER = TAGS[TAGS.index(INSTALL_TAG) + 1 : TAGS.index(INSTALL_TAG) + 3]


def hermes_update(sandbox: Sandbox, *args: str) -> None:
    subprocess.run(
        ["./hermes", "update", "--yes", *args],
        cwd=sandbox.install,
        env=sandbox.hermes_env(),
        capture_output=True,
        check=True,
    )


def where(sandbox: Sandbox) -> tuple[str, str, str]:
    return ("--install", str(sandbox.install), "--patches", str(sandbox.patches))


def test_pre_release_refs_are_listed_for_information_and_stay_green(sandbox: Sandbox) -> None:
    sandbox.publish(NEXT)
    hermes_update(sandbox)  # on branch main: lands detached, no backup yet
    sandbox.publish(AFTER)
    hermes_update(sandbox)  # detached: the old HEAD is kept
    before = git(sandbox.origin, "rev-parse", f"{NEXT}^{{commit}}")
    assert git(sandbox.install, "for-each-ref", "--format=%(refname)", "refs/hermes/") == (
        f"refs/hermes/pre-release/{before}"
    )

    code, document = run_json("leftovers", *where(sandbox))
    assert code == 0, document
    assert document["updater_backups"] == [
        {
            "ref": f"refs/hermes/pre-release/{before}",
            "commit": before,
            "kind": "pre-release",
            "needs_a_person": False,
            "commands": [],
        }
    ]
    text = run_cli("leftovers", *where(sandbox))
    assert text.returncode == 0
    assert "updater backups: 1 pre-release ref(s)" in text.stdout

    doctor = run_cli("doctor", *where(sandbox))
    state = next(line for line in doctor.stdout.splitlines() if "git state" in line)
    assert state.split()[0] == "ok", doctor.stdout
    assert "1 pre-release ref(s)" in state


def test_an_orphan_backup_needs_a_person_and_its_commands_work(sandbox: Sandbox) -> None:
    install = sandbox.install
    git(install, "checkout", "-q", "--orphan", "fresh")
    git(install, "commit", "-q", "-m", "history of its own")
    git(install, "branch", "-q", "-M", "fresh", "main")
    mine = git(install, "rev-parse", "HEAD")
    sandbox.publish(NEXT)
    hermes_update(sandbox, "--branch", "main")  # no common ancestor: reset, rescue ref kept
    assert git(install, "rev-parse", "HEAD") != mine

    code, document = run_json("leftovers", *where(sandbox))
    assert code == 5, "commits only a rescue ref holds are never green"
    [backup] = document["updater_backups"]
    assert backup["kind"] == "orphan-backup" and backup["commit"] == mine
    assert backup["needs_a_person"] is True
    look, keep, delete = backup["commands"]

    doctor = run_cli("doctor", *where(sandbox))
    state = next(line for line in doctor.stdout.splitlines() if "git state" in line)
    assert state.split()[0] != "ok" and "1 orphan backup(s) to look at" in state
    assert look in doctor.stdout

    # The printed commands, pasted as they are: look, keep on a branch, then delete the ref.
    for command in (look, keep, delete):
        subprocess.run(command, shell=True, cwd=install, check=True, capture_output=True)
    rescued = keep.split()[2]
    assert git(install, "rev-parse", rescued) == mine
    code, document = run_json("leftovers", *where(sandbox))
    assert code == 0 and document["updater_backups"] == []
