"""`apply` is never green while a stash parked by `hermes update` holds the user's content
(issue 8, case 6); the restore command it prints works when pasted.

The practice upstream's own `hermes update --keep-stash` parks the stash, as the real one does.
"""

from __future__ import annotations

import shlex
import subprocess

from helpers import run_cli, run_json

from patchkeeper.demo.sandbox import Sandbox

EDIT = "# operator: a note of my own\n"


def test_apply_after_a_parked_keep_stash_update_is_exit_5_with_a_working_command(
    sandbox: Sandbox,
) -> None:
    where = ("--install", str(sandbox.install), "--patches", str(sandbox.patches))
    assert run_cli("apply", *where).returncode == 0
    constants = sandbox.install / "hermes_constants.py"
    constants.write_text(constants.read_text() + EDIT)
    sandbox.publish("v2026.9.24")  # a release both patches still apply on
    subprocess.run(
        ["./hermes", "update", "--yes", "--keep-stash"],
        cwd=sandbox.install,
        env=sandbox.hermes_env(),
        capture_output=True,
        check=True,
    )
    assert EDIT not in constants.read_text(), "the updater parked the edit"

    code, document = run_json("apply", *where)
    assert code == 5, document
    outcomes = {p["name"]: p["outcome"] for p in document["patches"]}
    assert outcomes.pop("heartbeat-fence") == "upstream-has-it"  # upstream's own fix at 0.21.3
    assert set(outcomes.values()) <= {"applied", "applied-offset"}
    [note] = [n for n in document["notes"] if n.startswith("leftover ")]
    assert "hermes-update-autostash-" in note
    command = note.rsplit("; restore: ", 1)[1]
    argv = shlex.split(command)
    assert argv[:3] == ["patchkeeper", "leftovers", "restore"]

    restored = run_cli(*argv[1:])
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert constants.read_text().endswith(EDIT)
    code, document = run_json("status", *where)
    assert code == 0, document
