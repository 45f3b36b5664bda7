"""The foundation on the practice upstream: every outcome word, the six tags, the demo."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from patchkeeper.demo.sandbox import TAGS, Sandbox
from tests.helpers import bare_hermes_update, git, outcomes, run_cli, run_json, tree_snapshot

WRITES = ("applied", "applied-offset", "merged-3way")
EXPECTED = {  # the patches carry real upstream line numbers: an offset even at the base
    "v2026.9.11": {
        "adoption-retry": "not-applicable",
        "schema-once": "applied-offset",
        "heartbeat-fence": "applied-offset",  # before PR #109310
    },
    **{
        tag: {
            "adoption-retry": retry,
            "schema-once": schema,
            "heartbeat-fence": "upstream-has-it",  # PR #109310 is in, by content
        }
        for tag, retry, schema in (
            ("v2026.9.14", "applied-offset", "applied-offset"),
            ("v2026.9.24", "applied-offset", "applied-offset"),
            ("v2026.10.1", "applied-offset", "applied-offset"),
            ("v2026.10.8", "conflict", "applied-offset"),
            ("v2026.10.26", "upstream-has-it", "applied-offset"),
            ("v2026.11.9", "upstream-has-it", "conflict"),
        )
    },
}


def pending(expected: dict[str, str]) -> dict[str, str]:
    """What `status` says before `apply`: a patch that would be written is `pending`."""
    return {name: "pending" if word in WRITES else word for name, word in expected.items()}


def pk(sandbox: Sandbox, *args: str) -> tuple[int, dict]:
    return run_json(*args, "--install", str(sandbox.install), "--patches", str(sandbox.patches))


def test_check_against_every_tag(sandbox: Sandbox) -> None:
    sandbox.fetch_tags()
    before = tree_snapshot(sandbox.install)
    code, doc = pk(sandbox, "check", *[a for tag in TAGS for a in ("--ref", tag)])
    assert code == 3  # 0.22.1 and 0.24.0 conflict
    got = {t["ref"]: {p["name"]: p["outcome"] for p in t["patches"]} for t in doc["targets"]}
    assert got == EXPECTED
    by_ref = {t["ref"]: t for t in doc["targets"]}
    # Before #110192 (0.21.2) no variant applies: the launcher hunk would name an undefined
    # HANDOFF_ADOPTION_GRACE_SECONDS. The half-wired 0.22.1 is a conflict, never "has it".
    before_110192 = by_ref["v2026.9.11"]["patches"][0]["detail"]
    assert before_110192 == "no variant's Applies-To contains version 0.21.2"
    half = by_ref["v2026.10.8"]["patches"][0]["conflicts"]  # the worker's two hunks
    assert {(c["file"], c["hunk"]) for c in half} == {
        ("cron/scheduler.py", 2),
        ("cron/scheduler.py", 3),
    }
    (conflict,) = by_ref["v2026.11.9"]["patches"][1]["conflicts"]
    assert conflict["file"] == "cron/executions.py" and conflict["hunk"] >= 1
    assert conflict["mismatches"], "the differing upstream line is named"
    assert tree_snapshot(sandbox.install) == before


def test_apply_status_unapply_round_trip_keeps_user_edits(sandbox: Sandbox) -> None:
    install = sandbox.install
    pristine = {p: (install / p).read_text() for p in ("cron/scheduler.py", "cron/executions.py")}
    (install / "hermes_constants.py").write_text(
        (install / "hermes_constants.py").read_text() + "# operator note\n"
    )
    code, doc = pk(sandbox, "status")
    assert (code, outcomes(doc)) == (5, pending(EXPECTED["v2026.9.14"]))
    assert [p["would"] for p in doc["patches"]] == [
        word if word in WRITES else None for word in EXPECTED["v2026.9.14"].values()
    ]

    code, doc = pk(sandbox, "apply", "--no-smoke")
    assert (code, outcomes(doc)) == (5, EXPECTED["v2026.9.14"])  # written, not proven
    assert (install / "cron/adoption_busy_retry.py").is_file()
    assert (install / "cron/ledger_schema_once.py").is_file()
    in_place = {**{name: "already-applied" for name in EXPECTED["v2026.9.14"]},
                "heartbeat-fence": "upstream-has-it"}  # fmt: skip
    code, doc = pk(sandbox, "apply")
    assert (code, outcomes(doc)) == (0, in_place)
    code, doc = pk(sandbox, "status")
    assert (code, outcomes(doc)) == (0, in_place)

    # A user edit inside a patched file, away from the patch's lines, survives unapply.
    scheduler = install / "cron/scheduler.py"
    scheduler.write_text(scheduler.read_text() + "# keep me\n")
    code, doc = pk(sandbox, "unapply")
    assert code == 0
    assert not (install / "cron/adoption_busy_retry.py").exists()
    assert not (install / "cron/ledger_schema_once.py").exists()
    assert scheduler.read_text() == pristine["cron/scheduler.py"] + "# keep me\n"
    assert (install / "cron/executions.py").read_text() == pristine["cron/executions.py"]
    assert (install / "hermes_constants.py").read_text().endswith("# operator note\n")


def schema_once_on_sandbox_blobs(sandbox: Sandbox, tmp_path: Path) -> None:
    """Rebuild schema-once on the install's own blobs (its Base names a real upstream commit,
    whose blobs the sandbox lacks): same header, same change, a diff git can merge with."""
    patch = sandbox.patches / "schema-once.patch"
    text = patch.read_text()
    env = {**os.environ, "GIT_INDEX_FILE": str(tmp_path / "rebuild-index")}

    def run(*args: str) -> str:
        proc = subprocess.run(
            ["git", *args], cwd=sandbox.install, env=env, capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    run("read-tree", "HEAD")
    run("apply", "--cached", str(patch))
    tree = run("write-tree").strip()
    body = run("diff", "--full-index", "HEAD^{tree}", tree)
    assert "cron/executions.py" in body and "cron/ledger_schema_once.py" in body
    patch.write_text(text[: text.index("diff --git")] + body)


def test_merged_3way_on_the_sandbox(sandbox: Sandbox, tmp_path: Path) -> None:
    """A local commit changes a context line of schema-once: no direct apply, clean merge."""
    schema_once_on_sandbox_blobs(sandbox, tmp_path)
    executions = sandbox.install / "cron/executions.py"
    text = executions.read_text()
    context = '"cron" / "executions.db")\n    _ensure_cron_dir('  # two lines above the change
    assert text.count(context) == 1
    executions.write_text(
        text.replace(context, '"cron" / "executions.db")  # local note\n    _ensure_cron_dir(')
    )
    git(sandbox.install, "commit", "-qam", "local: annotate")
    code, doc = pk(sandbox, "apply")
    assert code == 0, doc
    assert outcomes(doc)["schema-once"] == "merged-3way"
    assert doc["patches"][1]["merged_files"] == ["cron/executions.py"]


def test_not_applicable_invalid_and_drifted_on_the_sandbox(sandbox: Sandbox) -> None:
    retry = sandbox.patches / "adoption-retry" / "scheduler-0.21.patch"
    original = retry.read_text()
    for variant in (sandbox.patches / "adoption-retry").glob("*.patch"):  # every shape's
        text = variant.read_text()
        variant.write_text(re.sub(r"Applies-To: .*", "Applies-To: >=0.19,<0.20", text))
    code, doc = pk(sandbox, "status")
    assert outcomes(doc)["adoption-retry"] == "not-applicable"

    retry.write_text(
        original.replace(
            "--- a/cron/scheduler.py", "new file mode 100644\n--- a/cron/scheduler.py", 1
        )
    )
    code, doc = pk(sandbox, "check", "--ref", "HEAD")
    assert code == 3 and outcomes(doc)["adoption-retry"] == "invalid"

    retry.write_text(original)
    assert pk(sandbox, "apply", "--no-smoke")[0] == 5  # written, not proven
    adoption = sandbox.install / "cron/adoption_busy_retry.py"
    adoption.write_text(adoption.read_text().replace("def ", "def  ", 1))
    code, doc = pk(sandbox, "status")
    assert (code, outcomes(doc)["adoption-retry"]) == (5, "drifted")


def test_demo_runs_without_network_and_explains(tmp_path: Path) -> None:
    proc = run_cli("demo", "--dir", tmp_path / "demo")
    assert proc.returncode == 0, proc.stderr
    for words in ("status", "apply", "upstream-has-it", "conflict", "applied-offset", "Explore:"):
        assert words in proc.stdout
    applying = proc.stdout[proc.stdout.index("== 2.") : proc.stdout.index("== 3.")]
    assert "exit code: 4" in applying  # 0.21.2: the hand-off path is broken, no fix fits
    assert "note: adoption-retry has no fix for this release" in applying
    assert "update Hermes to 0.21.3 first" in applying and "not proven" not in applying
    update = proc.stdout[proc.stdout.index("== 5.") :]
    assert "version  0.21.2 -> 0.21.3" in update and "your edits: restored 1 file(s)" in update
    assert re.search(r"heartbeat-fence +upstream-has-it", update)  # retired by content
    assert "note: heartbeat-fence: upstream has it now: retire the patch" in update
    assert re.search(r"adoption-retry +applied-offset", update)
    # heartbeat-fence is retired by its probe, no variant chosen: its check still proves
    # upstream's own fix, so all three run.
    checks = "ledger_adoption pass, ledger_schema pass, fire_claim_heartbeat pass"
    assert f"smoke: pass ({checks})" in update and "exit code: 0" in update
    home = tmp_path / "demo" / "home"
    assert f"Explore: HERMES_HOME={home} patchkeeper status --install " in proc.stdout
    assert not (tmp_path / "demo" / "hermes-agent" / "home").exists()
    assert f"Audit:   patchkeeper audit --home {home}" in proc.stdout
    audited = run_cli("audit", "--home", home)  # the planted ledger, as the demo left it
    assert audited.returncode == 5 and "Never started (no started_at): 1" in audited.stdout
    assert f"Release: patchkeeper demo --publish {tmp_path / 'demo'}" in proc.stdout
    published = run_cli("demo", "--publish", tmp_path / "demo")  # the line, as a pipx user has it
    assert published.returncode == 0 and "published v2026.9.24" in published.stdout, published
    proc = run_cli("demo", "--dir", tmp_path / "demo")
    assert proc.returncode == 2 and "not empty" in proc.stderr
    (tmp_path / "a-file").write_text("")
    unusable = run_cli("demo", "--dir", tmp_path / "a-file" / "demo")
    assert unusable.returncode == 2 and unusable.stderr.count("\n") == 1, unusable
    assert "cannot build a sandbox there" in unusable.stderr


def test_demo_tag_without_publish_is_one_line_and_builds_nothing(tmp_path: Path) -> None:
    """`--tag` only means something with --publish: without it the whole demo ran (a new
    sandbox in a temp dir) and the release asked for was never published."""
    env = {**os.environ, "TMPDIR": str(tmp_path), "NO_COLOR": "1"}
    argv = [sys.executable, "-m", "patchkeeper", "demo", "--tag", "0.22.0"]
    proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stdout + proc.stderr
    assert "--tag goes with --publish" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_status_after_a_bare_hermes_update_judges_afresh(sandbox: Sandbox) -> None:
    """Records made on the old HEAD say nothing about the new tree: no false `drifted`."""
    assert pk(sandbox, "apply", "--no-smoke")[0] == 5  # written, not proven
    sandbox.publish("v2026.10.26")
    assert "parked" in bare_hermes_update(sandbox)
    sandbox.fetch_tags()
    code, doc = pk(sandbox, "status")
    assert code == 5
    assert outcomes(doc) == pending(EXPECTED["v2026.10.26"])
    schema = doc["patches"][1]
    assert any("HEAD has moved since" in note for note in schema["notes"])
    assert any("hermes-update-autostash" in note for note in schema["notes"])


def test_writing_commands_refuse_while_an_update_is_unfinished(sandbox: Sandbox) -> None:
    assert pk(sandbox, "apply", "--no-smoke")[0] == 5  # written, not proven
    sandbox.publish("v2026.9.24")
    shutil.rmtree(sandbox.patches / "smoke")
    killed = subprocess.run(
        [sys.executable, "-m", "patchkeeper", "update", "--install", str(sandbox.install),
         "--patches", str(sandbox.patches)],
        env={**sandbox.hermes_env(), "PATCHKEEPER_STOP_AT_PHASE": "5"},
        capture_output=True, check=False,
    )  # fmt: skip
    assert killed.returncode == -9

    code, doc = pk(sandbox, "status")
    assert code == 5 and "run `patchkeeper recover`" in doc["notes"][0]
    before = tree_snapshot(sandbox.install)
    for command in (("apply",), ("unapply",), ("refresh", "schema-once")):
        proc = run_cli(*command, "--install", sandbox.install, "--patches", sandbox.patches)
        assert proc.returncode == 5, (command, proc.stderr)
        assert "run `patchkeeper recover` first" in proc.stderr
    assert tree_snapshot(sandbox.install) == before
    recovered = run_cli("recover", "--install", sandbox.install, "--patches", sandbox.patches)
    assert "the new version, but not everything is in place (exit 4)" in recovered.stdout
    assert recovered.returncode == 4  # the smoke check the patches name was removed above:
    # "could not check" is never a pass


def test_a_mistyped_update_option_is_refused_not_passed_on(sandbox: Sandbox) -> None:
    assert pk(sandbox, "apply", "--no-smoke")[0] == 5  # written, not proven
    sandbox.publish("v2026.10.1")
    before = tree_snapshot(sandbox.install)
    proc = run_cli(
        "update", "--previw", "v2026.10.1", "--install", sandbox.install,
        "--patches", sandbox.patches,
    )  # fmt: skip
    assert proc.returncode == 2 and "No such option '--previw'" in proc.stderr
    assert tree_snapshot(sandbox.install) == before


def test_check_writes_junit_for_ci(sandbox: Sandbox, tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    sandbox.fetch_tags()
    junit = tmp_path / "patchkeeper.xml"
    code, _ = pk(
        sandbox, "check", "--ref", "v2026.11.9", "--ref", "v2026.10.26", "--junit", str(junit)
    )
    assert code == 3
    suites = ET.parse(junit).getroot().findall("testsuite")
    assert [(s.get("tests"), s.get("failures"), s.get("skipped")) for s in suites] == [
        ("3", "1", "2"),
        ("3", "0", "2"),
    ]
    failure = suites[0].find("testcase[@name='schema-once']/failure")
    assert failure is not None and failure.get("type") == "conflict"
    expected = "initialize=_initialize_schema)"  # the line upstream reformatted, and what it is now
    assert f"{expected}', upstream has '    return open_db('" in (failure.text or "")
    assert "\x1b[" not in junit.read_text()  # never colour in a file
    assert suites[0].find("testcase[@name='adoption-retry']/skipped") is not None
    assert suites[1].find("testcase[@name='adoption-retry']/skipped") is not None
    for suite in suites:  # upstream's own heartbeat fix is in both
        assert suite.find("testcase[@name='heartbeat-fence']/skipped") is not None


def test_the_planted_ledger_gives_audit_a_loss_and_a_green_but_failing_job(
    sandbox: Sandbox,
) -> None:
    from patchkeeper.demo.ledger import LOST_JOB, plant_ledger

    plant_ledger(sandbox.home)
    before = tree_snapshot(sandbox.home)
    code, doc = run_json("audit", "--home", str(sandbox.home))
    assert code == 5
    (lost,) = doc["never_started"]
    assert (lost["job_id"], lost["kind"], lost["count"]) == (LOST_JOB, "locked", 1)
    (green,) = doc["green_but_failing"]
    assert (green["job_id"], green["last_status"]) == (LOST_JOB, "ok")
    assert tree_snapshot(sandbox.home) == before  # audit only reads


def test_publish_releases_the_next_practice_version(sandbox: Sandbox) -> None:
    def publish(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "patchkeeper.demo", "publish", str(sandbox.root), *args]
        return subprocess.run(command, capture_output=True, text=True, check=False)

    assert sandbox.published() == "v2026.9.14"
    proc = publish()
    assert proc.returncode == 0 and proc.stdout.startswith("published v2026.9.24"), proc.stderr
    assert git(sandbox.origin, "rev-parse", "main") == git(
        sandbox.origin, "rev-parse", "v2026.9.24^{commit}"
    )
    assert publish("v2026.11.9").returncode == 0 and sandbox.published() == "v2026.11.9"
    last = publish()
    assert last.returncode == 2 and "no practice release after v2026.11.9" in last.stderr
    wrong = publish("v9.9.9")
    assert wrong.returncode == 2 and "not a sandbox release" in wrong.stderr
    assert "Traceback" not in last.stderr + wrong.stderr
