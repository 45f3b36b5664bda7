"""`patchkeeper update` on the sandbox: real git, the sandbox's own `hermes update`, real processes.

The helpers here (box, pk, pk_json, ...) are shared by the other update/leftovers/recover tests.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from patchkeeper.demo.sandbox import Sandbox
from patchkeeper.install.records.update_journal import PHASES
from tests.helpers import GIT_ID, bare_hermes_update, git

USER_README = "\nA note the operator keeps locally.\n"
USER_FILE = "local-notes.txt"
# 0.22.0 inserts its terminal-state constants right below this line: an edit here conflicts.
PROCESS_ID_LINE = "_PROCESS_ID = uuid.uuid4().hex\n"


def quiet(sandbox: Sandbox, *, smoke: bool = False) -> Sandbox:
    """The sandbox with its `Smoke:` headers taken out (the ledger check holds a lock for 7 s)."""
    if not smoke:
        for patch in sandbox.patches.rglob("*.patch"):
            lines = patch.read_text().splitlines(keepends=True)
            patch.write_text(
                "".join(
                    "Smoke: none (taken out: the test judges the tree)\n"
                    if line.startswith("Smoke:")
                    else line
                    for line in lines
                )
            )
    return sandbox


@pytest.fixture
def box(sandbox: Sandbox) -> Sandbox:
    return quiet(sandbox)


def pk(box: Sandbox, name: str, *args: str | Path, env: dict[str, str] | None = None, **kw: Any):
    """Run `python -m patchkeeper NAME --patches <sandbox patch set> ARGS` in a real process."""
    return subprocess.run(
        [sys.executable, "-m", "patchkeeper", name, "--patches", str(box.patches), *map(str, args)],
        capture_output=True,
        text=True,
        env={**box.hermes_env(), **GIT_ID, "NO_COLOR": "1", **(env or {})},
        check=False,
        **kw,
    )


def pk_json(box: Sandbox, name: str, *args: str | Path, **kw: Any) -> tuple[int, dict[str, Any]]:
    proc = pk(box, name, "--json", *args, **kw)
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def outcomes_of(document: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["outcome"] for p in document["patches"]}


def with_user_edits(box: Sandbox) -> None:
    """A tracked edit and an untracked file of the operator's own, far from the patches."""
    with (box.install / "README.md").open("a") as handle:
        handle.write(USER_README)
    (box.install / USER_FILE).write_text("remember to rotate the keys\n")


def user_edits_present(box: Sandbox) -> bool:
    readme = (box.install / "README.md").read_text()
    return readme.endswith(USER_README) and (box.install / USER_FILE).is_file()


def applied(box: Sandbox) -> None:
    proc = pk(box, "apply", "--no-smoke")  # setup only: the update under test runs the checks
    assert proc.returncode == 5, proc.stdout + proc.stderr  # written, not proven


def set_command(box: Sandbox, command: list[str], extra: str = "") -> None:
    """Point [update] command at COMMAND (keeping the rest of the sandbox's config)."""
    text = box.config.read_text()
    start = text.index("command = ")
    end = text.index("\n", start)
    box.config.write_text(text[:start] + f"command = {json.dumps(command)}{extra}" + text[end:])


def run_refs(box: Sandbox) -> list[str]:
    return git(box.install, "for-each-ref", "--format=%(refname)", "refs/patchkeeper/updates/")


def journal_file(box: Sandbox) -> Path:
    return box.install / ".git/patchkeeper/journal.json"


def patch_plus_lines(box: Sandbox, variant: str) -> list[tuple[str, str]]:
    """(file, line) for every line VARIANT adds: to tell "fully applied" from "fully absent"."""
    pairs, current = [], ""
    for line in (box.patches / variant).read_text().splitlines():
        if line.startswith("+++ b/"):
            current = line[6:]
        elif line.startswith("+") and not line.startswith("+++") and line[1:].strip():
            pairs.append((current, line[1:]))
    return pairs


def patch_presence(box: Sandbox, variant: str) -> str:
    """`present`, `absent` or `partial` by the lines the variant adds."""
    found = []
    for path, line in patch_plus_lines(box, variant):
        target = box.install / path
        found.append(target.is_file() and line in target.read_text().splitlines())
    return "present" if all(found) else "absent" if not any(found) else "partial"


# ---------------------------------------------------------------- the scenarios of the issue


def test_update_carries_patches_and_user_edits_to_a_new_version(box: Sandbox) -> None:
    applied(box)
    with_user_edits(box)
    box.publish("v2026.10.1")
    code, doc = pk_json(box, "update")
    assert code == 0, doc["attention"]
    assert outcomes_of(doc) == {
        "adoption-retry": "applied-offset",
        "schema-once": "applied-offset",
        "heartbeat-fence": "upstream-has-it",  # PR #109310 is in from 0.21.3
    }
    assert user_edits_present(box)
    assert git(box.install, "stash", "list") == ""
    assert doc["install"]["head_before"] != doc["install"]["head_after"]
    assert git(box.install, "rev-parse", "HEAD") == git(box.origin, "rev-parse", "v2026.10.1^{}")
    assert doc["upstream"]["exit_status"] == 0
    assert [p["name"] for p in doc["phases"]] == list(PHASES)
    assert {p["name"]: p["status"] for p in doc["phases"]}["preview"] == "skipped"
    assert doc["smoke"]["status"] == "not-configured"
    assert sorted(doc["restore"]["restored"]) == ["README.md", USER_FILE]
    assert run_refs(box) == "" and not journal_file(box).exists()
    status = pk(box, "status")
    assert status.returncode == 0, status.stdout


def test_update_text_report_streams_upstream_output_after_a_phase_line(box: Sandbox) -> None:
    applied(box)
    box.publish("v2026.10.1")
    proc = pk(box, "update")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    err, out = proc.stderr, proc.stdout  # progress and the updater's output: stderr (item 15)
    assert err.index("[4/10] upstream") < err.index("Code updated") < err.index("[5/10]")
    assert "smoke: not configured" in out and "applied-offset" in out
    assert "[4/10]" not in out and "Code updated" not in out


def test_update_to_a_conflicting_version_reports_file_and_hunk_exit_3(box: Sandbox) -> None:
    applied(box)
    with_user_edits(box)
    box.publish("v2026.11.9")
    code, doc = pk_json(box, "update")
    assert code == 3
    results = {p["name"]: p for p in doc["patches"]}
    assert results["adoption-retry"]["outcome"] == "upstream-has-it"
    assert results["schema-once"]["outcome"] == "conflict"
    conflict = results["schema-once"]["conflicts"][0]
    assert conflict["file"] == "cron/executions.py" and conflict["hunk"] >= 1
    assert user_edits_present(box)
    assert doc["install"]["version_after"] == "0.24.0"
    assert patch_presence(box, "schema-once.patch") != "partial"  # never half applied
    assert git(box.install, "stash", "list") == ""


def test_update_to_a_version_that_ships_the_fix_says_retire_it(box: Sandbox) -> None:
    applied(box)
    box.publish("v2026.10.26")  # hermes update fetches the branch only: no tags come with it
    code, doc = pk_json(box, "update")
    assert code == 0, doc["attention"]
    assert outcomes_of(doc) == {
        "adoption-retry": "upstream-has-it",
        "schema-once": "applied-offset",
        "heartbeat-fence": "upstream-has-it",
    }
    assert any("adoption-retry" in n and "retire" in n for n in doc["notes"])
    assert any("heartbeat-fence" in n and "retire" in n for n in doc["notes"])
    assert doc["install"]["version_after"] == "0.23.0"  # read from the new version file
    # which settles the version: origin is not asked for its tags (no round trip, none adopted)
    assert not any("tagged" in n for n in doc["notes"])
    assert git(box.install, "tag", "--list", "v2026.10.26") == ""


def test_update_heals_a_stash_parked_by_a_bare_hermes_update(box: Sandbox) -> None:
    applied(box)
    box.publish("v2026.10.26")
    assert "parked" in bare_hermes_update(box)
    parked = git(box.install, "rev-parse", "refs/stash")
    box.fetch_tags()
    assert pk(box, "status").returncode != 0
    listing = pk(box, "leftovers")
    assert listing.returncode == 5 and "patch-content" in listing.stdout

    code, doc = pk_json(box, "update")
    assert code == 0, doc["attention"]
    (leftover,) = doc["leftovers"]
    assert (leftover["classification"], leftover["action"]) == ("patch-content", "dropped")
    assert any("parked" in note for note in leftover["notes"])
    assert git(box.install, "stash", "list") == ""
    assert git(box.install, "rev-parse", leftover["backup_ref"]) == parked
    assert pk(box, "status").returncode == 0


def with_conflicting_edit(box: Sandbox) -> Path:
    """Patches applied, the operator's edits, one of them where v2026.10.1 (published) changes."""
    applied(box)
    with_user_edits(box)
    executions = box.install / "cron/executions.py"
    executions.write_text(executions.read_text().replace(
        PROCESS_ID_LINE, PROCESS_ID_LINE + "_LOCAL_STATES = ('unknown','lost')\n"))  # fmt: skip
    box.publish("v2026.10.1")
    return executions


def test_a_user_edit_that_conflicts_upstream_stays_in_a_named_ref_exit_5(box: Sandbox) -> None:
    executions = with_conflicting_edit(box)
    proc = pk(box, "update")
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert "kept in refs/patchkeeper/updates/" in proc.stdout
    assert user_edits_present(box)  # the other edits came back
    (ref,) = run_refs(box).splitlines()
    assert ref.endswith("/edits")
    assert "'lost'" in git(box.install, "show", f"{ref}:cron/executions.py")
    assert patch_presence(box, "schema-once.patch") == "present"
    listing = pk(box, "leftovers")
    assert "set-aside" in listing.stdout and "user-content" in listing.stdout

    printed = proc.stdout.split("merge them with conflict markers: ", 1)[1].splitlines()[0]
    words = printed.split()
    assert words[:3] == ["patchkeeper", "leftovers", "restore"] and "--markers" in words
    merged = pk(box, *words[1:])  # the printed command, as printed
    assert merged.returncode == 5, merged.stdout + merged.stderr
    text = executions.read_text()
    assert "<<<<<<<" in text and "'lost'" in text and "_TERMINAL_STATES" in text
    assert patch_presence(box, "schema-once.patch") == "present"
    assert run_refs(box) == ref  # kept until the person who resolves the markers drops it


def _consistent_and_nothing_lost(box: Sandbox, head: str) -> None:
    assert git(box.install, "rev-parse", "HEAD") == head
    assert user_edits_present(box)
    for variant in ("adoption-retry/scheduler-0.21.patch", "schema-once.patch"):
        assert patch_presence(box, variant) == "present"
    assert git(box.install, "stash", "list") == ""
    assert not journal_file(box).exists()
    status = pk(box, "status")  # the update asked for did not happen: never green
    assert status.returncode == 5 and "did not happen" in status.stdout


def test_upstream_command_that_fails_is_reported_and_nothing_is_lost(box: Sandbox) -> None:
    applied(box)
    with_user_edits(box)
    head = git(box.install, "rev-parse", "HEAD")
    set_command(box, ["sh", "-c", "echo 'upstream says: boom'; exit 7"])
    code, doc = pk_json(box, "update")
    assert code == 5
    assert doc["upstream"]["exit_status"] == 7 and "boom" in doc["upstream"]["tail"][-1]
    assert any("upstream command failed (exit 7)" in a for a in doc["attention"])
    assert {p["name"]: p["status"] for p in doc["phases"]}["post"] == "skipped"
    _consistent_and_nothing_lost(box, head)


def test_upstream_command_that_hangs_is_killed_with_its_group(box: Sandbox, tmp_path) -> None:
    applied(box)
    with_user_edits(box)
    head = git(box.install, "rev-parse", "HEAD")
    child = tmp_path / "child.pid"
    set_command(box, ["sh", "-c", f"sleep 60 & echo $! > {child}; echo started; wait"])
    started = time.monotonic()
    code, doc = pk_json(box, "update", "--timeout", "1")
    assert time.monotonic() - started < 20
    assert code == 5 and doc["upstream"]["timed_out"] is True
    assert "timed out" in doc["attention"][0]
    pid = int(child.read_text())
    time.sleep(0.2)
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()
    _consistent_and_nothing_lost(box, head)


def test_upstream_command_killed_by_a_signal_is_a_failure(box: Sandbox) -> None:
    applied(box)
    with_user_edits(box)
    head = git(box.install, "rev-parse", "HEAD")
    set_command(box, ["sh", "-c", "kill -9 $$"])
    code, doc = pk_json(box, "update")
    assert code == 5 and doc["upstream"]["exit_status"] == -9
    assert "killed by signal 9" in doc["attention"][0]
    _consistent_and_nothing_lost(box, head)


def test_upstream_command_that_cannot_start_is_a_failure(box: Sandbox) -> None:
    applied(box)
    head = git(box.install, "rev-parse", "HEAD")
    set_command(box, ["./no-such-updater"])
    code, doc = pk_json(box, "update")
    assert code == 5 and "could not start" in doc["upstream"]["error"]
    assert git(box.install, "rev-parse", "HEAD") == head
    assert pk(box, "status").returncode == 5  # the update did not happen


def test_preview_stops_before_touching_anything_unless_forced(box: Sandbox) -> None:
    applied(box)
    with_user_edits(box)
    box.publish("v2026.11.9")
    box.fetch_tags()
    head = git(box.install, "rev-parse", "HEAD")
    code, doc = pk_json(box, "update", "--preview", "v2026.11.9")
    assert code == 3 and doc["upstream"] is None
    assert outcomes_of(doc)["schema-once"] == "conflict"
    assert git(box.install, "rev-parse", "HEAD") == head
    assert "once_per_database" in (box.install / "cron/executions.py").read_text()
    assert not journal_file(box).exists()
    # The update asked for did not happen, and the report says so with the way on.
    assert doc["update_done"] is False and "preview" in doc["not_done"]
    [line] = [a for a in doc["attention"] if a.startswith("schema-once would not apply")]
    forced = line.rsplit("update anyway: ", 1)[1]
    assert shlex.split(forced)[:5] == [
        "patchkeeper",
        "update",
        "--preview",
        "v2026.11.9",
        "--force",
    ]

    code, doc = pk_json(box, "update", "--preview", "v2026.11.9", "--force")
    assert code == 3 and doc["upstream"]["exit_status"] == 0
    assert git(box.install, "rev-parse", "HEAD") != head


def test_preview_of_an_unknown_ref_is_a_one_line_error(box: Sandbox) -> None:
    proc = pk(box, "update", "--preview", "no-such-ref")
    assert proc.returncode == 2 and "no-such-ref" in proc.stderr
    *progress, error = proc.stderr.strip().splitlines()  # phase lines go to stderr (item 15)
    assert error.startswith("patchkeeper: error: ") and "no-such-ref" in error
    assert all(re.match(r"patchkeeper: \[\d+/10\] ", line) for line in progress), progress
    assert not journal_file(box).exists()


def test_update_refuses_in_the_middle_of_a_merge(box: Sandbox) -> None:
    applied(box)
    (box.install / ".git/MERGE_HEAD").write_text(git(box.install, "rev-parse", "HEAD") + "\n")
    before = (box.install / "cron/executions.py").read_text()
    proc = pk(box, "update")
    assert proc.returncode == 2 and "merge" in proc.stderr
    assert (box.install / "cron/executions.py").read_text() == before
    assert not journal_file(box).exists()


def test_update_refuses_while_an_unfinished_journal_exists(box: Sandbox) -> None:
    applied(box)
    box.publish("v2026.10.1")
    killed = pk(box, "update", env={"PATCHKEEPER_STOP_AT_PHASE": "5"})
    assert killed.returncode == -9
    proc = pk(box, "update")
    assert proc.returncode == 5
    assert "patchkeeper recover" in proc.stderr and "phase 5 (leftovers)" in proc.stderr


def test_post_apply_commands_run_after_the_patches_are_back(box: Sandbox, tmp_path) -> None:
    applied(box)
    box.publish("v2026.10.1")
    seen = tmp_path / "seen"
    check = f"grep -c once_per_database cron/executions.py > {seen}"
    set_command(box, ["./hermes", "update", "--yes"],
                extra=f'\npost_apply = [["sh", "-c", "{check}"], ["false"]]')  # fmt: skip
    code, doc = pk_json(box, "update")
    assert int(seen.read_text()) >= 1  # it saw the patched file
    assert [p["exit_status"] for p in doc["post"]] == [0, 1]
    assert code == 5 and any("post-apply command false failed" in a for a in doc["attention"])


def test_update_passes_extra_args_to_the_upstream_command(box: Sandbox) -> None:
    applied(box)
    box.publish("v2026.10.1")
    code, doc = pk_json(box, "update", "--", "--branch", "no-such-branch")
    assert doc["upstream"]["command"][-2:] == ["--branch", "no-such-branch"]
    # The updater really got it: it fetched that branch, failed, and nothing moved.
    assert doc["upstream"]["exit_status"] not in (0, None)
    assert any("no-such-branch" in line for line in doc["upstream"]["tail"])
    assert code == 5 and doc["install"]["version_after"] == "0.21.3"


def test_update_with_smoke_checks_runs_them(sandbox: Sandbox) -> None:
    box = quiet(sandbox, smoke=True)
    applied(box)
    box.publish("v2026.10.1")
    code, doc = pk_json(box, "update")
    assert doc["smoke"]["status"] == "pass", doc["smoke"]
    assert code == 0


def test_update_json_is_one_document_with_the_contract_fields(box: Sandbox) -> None:
    applied(box)
    box.publish("v2026.10.1")
    code, doc = pk_json(box, "update")
    for key in ("schema", "command", "exit_code", "patches", "phases", "leftovers", "restore",
                "smoke", "upstream", "attention"):  # fmt: skip
        assert key in doc
    assert (doc["command"], doc["exit_code"]) == ("update", code)
    assert all({"name", "outcome"} <= set(p) for p in doc["patches"])


def test_a_user_edit_in_a_patched_file_is_merged_back_with_the_patch(box: Sandbox) -> None:
    applied(box)
    scheduler = box.install / "cron/scheduler.py"
    scheduler.write_text(scheduler.read_text() + "\n# operator: local tweak\n")
    box.publish("v2026.10.1")
    code, doc = pk_json(box, "update")
    assert code == 0, doc["attention"]
    assert doc["restore"]["restored"] == ["cron/scheduler.py"]
    assert scheduler.read_text().endswith("\n# operator: local tweak\n")
    assert patch_presence(box, "adoption-retry/scheduler-0.21.patch") == "present"
    assert "_TERMINAL_STATES" in (box.install / "cron/executions.py").read_text()  # 0.22.0


def test_a_chmod_of_yours_on_a_patched_file_survives_the_update(box: Sandbox) -> None:
    """`git apply --reverse` puts a diff's own mode back: a chmod of a patched file once read
    as "no edits of yours", and the update dropped it with exit 0."""
    applied(box)
    scheduler = box.install / "cron/scheduler.py"
    scheduler.chmod(0o755)
    box.publish("v2026.10.1")
    code, doc = pk_json(box, "update")
    assert code == 0, doc["attention"]
    assert doc["restore"]["restored"] == ["cron/scheduler.py"]
    assert scheduler.stat().st_mode & 0o111 == 0o111
    assert patch_presence(box, "adoption-retry/scheduler-0.21.patch") == "present"


def test_the_version_after_is_read_with_the_patches_back(box: Sandbox) -> None:
    """A version command that reads what a patch writes (here: a file schema-once creates)
    answers after the patches are back; phase 6 asked it before it wrote them."""
    created = "cron/ledger_schema_once.py"
    script = (  # the release from the install stamp, "+local" once the patch's file is there
        "v=$(sed -n 's/^ *\"baseVersion\": \"\\(.*\\)\",$/\\1/p' install-stamp.json); "
        f'if [ -e {created} ]; then echo "$v+local"; else echo "$v"; fi'
    )
    text = box.config.read_text()
    sources, tags = text.index("[[install.version_source]]"), text.index("[tags]")
    command = f"version_command = {json.dumps(['sh', '-c', script])}\n\n"
    box.config.write_text(text[:sources] + command + text[tags:])
    applied(box)
    box.publish("v2026.10.1")
    code, doc = pk_json(box, "update")
    assert code == 0, doc["attention"]
    assert (box.install / created).is_file()
    assert doc["install"]["version_after"] == "0.22.0+local"


def test_a_parked_stash_of_user_content_is_kept_and_restorable(box: Sandbox) -> None:
    (box.install / "hermes_cli/sqlite_util.py").write_text(
        (box.install / "hermes_cli/sqlite_util.py").read_text() + "\n# operator tweak\n"
    )
    git(box.install, "stash", "push", "-q", "-m", "hermes-update-autostash-20261001-120000")
    sha = git(box.install, "rev-parse", "refs/stash")
    assert pk(box, "apply").returncode == 5, "a parked stash of the user's is never green"
    box.publish("v2026.10.1")
    code, doc = pk_json(box, "update")
    assert code == 5
    (leftover,) = doc["leftovers"]
    assert (leftover["classification"], leftover["action"]) == ("user-content", "kept")
    assert leftover["command"].startswith(f"patchkeeper leftovers restore {sha[:10]}")
    assert git(box.install, "rev-parse", "refs/stash") == sha  # never dropped

    restore = pk(box, "leftovers", "restore", sha[:10])
    assert restore.returncode == 0, restore.stdout + restore.stderr
    assert (box.install / "hermes_cli/sqlite_util.py").read_text().endswith("# operator tweak\n")
    assert pk(box, "leftovers").returncode == 0 and pk(box, "status").returncode == 0


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ('print(json.dumps({"check": "probe", "verdict": "fail", "steps": []}))', "fail"),
        ("raise SystemExit(3)", "error"),
    ],
)
def test_a_smoke_check_that_fails_or_cannot_check_is_exit_4(
    box: Sandbox, body: str, status: str
) -> None:
    (box.patches / "smoke/probe.py").write_text(f"import json\n{body}\n")
    with box.config.open("a") as handle:
        handle.write('\n[smoke]\nchecks = ["probe"]\n')
    applied(box)
    box.publish("v2026.10.1")
    code, doc = pk_json(box, "update")
    assert (code, doc["smoke"]["status"]) == (4, status), doc["smoke"]
    assert doc["smoke"]["checks"][0]["name"] == "probe"
    assert outcomes_of(doc) == {
        "adoption-retry": "applied-offset",
        "schema-once": "applied-offset",
        "heartbeat-fence": "upstream-has-it",  # PR #109310 is in from 0.21.3
    }
