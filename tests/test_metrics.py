"""`--metrics FILE`: each judging command's result as Prometheus text, read by promtool.

The seeds' failure is replayed on the practice upstream: the updater parks the stash that held
the fixes and says success; `status --metrics` on the next timer tick must make the alert rules
of docs/metrics.md fire (checked with `promtool test rules`, no server needed).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from helpers import diff_of, make_repo, patch_text, run_cli, run_json, write_patch_set

from patchkeeper.demo.ledger import plant_ledger
from patchkeeper.demo.sandbox import Sandbox

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (Debian: apt-get install prometheus)"
)
SAMPLE = re.compile(r"^(?P<name>[a-z_]+)\{(?P<labels>[^}]*)\} (?P<value>\S+)$")
DOCS = Path(__file__).resolve().parent.parent / "docs"


def samples(path: Path) -> Iterator[tuple[str, dict[str, str], float]]:
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        assert match, f"not a sample line: {line!r}"
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match["labels"]))
        yield match["name"], labels, float(match["value"])


def value(path: Path, name: str, **labels: str) -> float:
    [found] = [v for n, got, v in samples(path) if n == name and labels.items() <= got.items()]
    return found


def series_name(name: str, labels: dict[str, str]) -> str:
    """NAME{LABELS} as promtool's input_series writes a series."""
    return name + "{" + ",".join(f"{k}={json.dumps(v)}" for k, v in labels.items()) + "}"


def promtool_accepts(path: Path) -> None:
    if PROMTOOL is None:
        return
    proc = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=path.read_bytes(), capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def alert_rules() -> str:
    """The rules file docs/metrics.md shows (its one yaml block)."""
    [block] = re.findall(r"```yaml\n(.*?)```", (DOCS / "metrics.md").read_text(), re.S)
    return block


def where(sandbox: Sandbox) -> tuple[str, ...]:
    return ("--install", str(sandbox.install), "--patches", str(sandbox.patches))


def park_the_fixes(sandbox: Sandbox) -> None:
    """The seeds' update: the fixes are in the tree, the updater stashes them, moves HEAD,
    keeps the stash parked and says success."""
    assert run_cli("apply", *where(sandbox)).returncode == 0
    sandbox.publish("v2026.9.24")
    subprocess.run(
        ["./hermes", "update", "--yes", "--keep-stash"],
        cwd=sandbox.install,
        env=sandbox.hermes_env(),
        capture_output=True,
        check=True,
    )


@needs_promtool
def test_the_seeds_failure_makes_the_documented_alerts_fire(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    park_the_fixes(sandbox)
    metrics = tmp_path / "status.prom"
    proc = run_cli("status", *where(sandbox), "--metrics", metrics)
    assert proc.returncode == 5, proc.stdout + proc.stderr
    promtool_accepts(metrics)
    assert value(metrics, "patchkeeper_fixes", state="missing") == 2
    assert value(metrics, "patchkeeper_leftovers") == 1
    assert value(metrics, "patchkeeper_run_ok") == 0

    rules = tmp_path / "rules.yml"
    rules.write_text(alert_rules())
    checked = subprocess.run([PROMTOOL, "check", "rules", rules], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    groups = yaml.safe_load(alert_rules())["groups"]
    by_name = {rule["alert"]: rule for group in groups for rule in group["rules"]}
    series = [  # the file's samples, held for 20 minutes
        {"series": series_name(name, labels), "values": f"{number:g}x20"}
        for name, labels, number in samples(metrics)
        if name != "patchkeeper_run_timestamp_seconds"
    ]
    expected = []
    for alert, labels in (
        ("PatchkeeperFixMissing", {"state": "missing"}),
        ("PatchkeeperLeftoverParked", {}),
    ):
        rule = by_name[alert]
        base = {"command": "status", "install": str(sandbox.install)}
        expected.append(
            {
                "eval_time": "15m",
                "alertname": alert,
                "exp_alerts": [
                    {
                        "exp_labels": {**base, **labels, **rule["labels"]},
                        "exp_annotations": rule["annotations"],
                    }
                ],
            }
        )
    test_file = tmp_path / "test.yml"
    test_file.write_text(
        yaml.safe_dump(
            {
                "rule_files": [str(rules)],
                "evaluation_interval": "1m",
                "tests": [
                    {"interval": "1m", "input_series": series, "alert_rule_test": expected}
                ],
            }
        )
    )
    fired = subprocess.run([PROMTOOL, "test", "rules", test_file], capture_output=True, text=True)
    assert fired.returncode == 0, fired.stdout + fired.stderr


def test_status_and_apply_figures_are_those_of_their_json(sandbox: Sandbox, tmp_path: Path) -> None:
    park_the_fixes(sandbox)
    for command in ("status", "apply"):
        metrics = tmp_path / f"{command}.prom"
        code, document = run_json(command, *where(sandbox), "--metrics", metrics)
        promtool_accepts(metrics)
        assert value(metrics, "patchkeeper_run_exit_code", command=command) == code
        assert value(metrics, "patchkeeper_run_ok") == (code == 0)
        for outcome in {p["outcome"] for p in document["patches"]}:
            counted = sum(p["outcome"] == outcome for p in document["patches"])
            assert value(metrics, "patchkeeper_patches", outcome=outcome) == counted
    # apply wrote the two fixes again and proved them: in place, none missing; the parked
    # stash is still a leftover, so the run is not green.
    assert value(metrics, "patchkeeper_fixes", state="in_place") == 3
    assert value(metrics, "patchkeeper_fixes", state="missing") == 0
    assert value(metrics, "patchkeeper_smoke_checks", verdict="pass") >= 2
    assert value(metrics, "patchkeeper_leftovers") == 1
    assert code == 5


def test_update_reports_itself_and_status_reports_the_last_update(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    sandbox.publish("v2026.9.24")
    metrics = tmp_path / "update.prom"
    code, document = run_json("update", *where(sandbox), "--metrics", metrics)
    assert code == 0, document
    promtool_accepts(metrics)
    assert value(metrics, "patchkeeper_update_ok") == 1
    assert value(metrics, "patchkeeper_update_exit_code") == 0
    assert value(metrics, "patchkeeper_fixes", state="missing") == 0
    assert value(metrics, "patchkeeper_fixes", state="unproven") == 0
    later = tmp_path / "status.prom"
    assert run_cli("status", *where(sandbox), "--metrics", later).returncode == 0
    assert value(later, "patchkeeper_update_timestamp_seconds") == value(
        metrics, "patchkeeper_update_timestamp_seconds"
    )


def test_an_update_whose_fix_is_not_proven_counts_it_unproven(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    metrics = tmp_path / "apply.prom"
    code, document = run_json("apply", *where(sandbox), "--no-smoke", "--metrics", metrics)
    assert code == 5, document
    written = sum(p["outcome"] in ("applied", "applied-offset") for p in document["patches"])
    assert written == 2
    assert value(metrics, "patchkeeper_fixes", state="unproven") == written
    assert value(metrics, "patchkeeper_fixes", state="in_place") == 1


def test_status_counts_unproven_what_its_notes_say_nothing_proves(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    assert run_cli("apply", *where(sandbox), "--no-smoke").returncode == 5
    metrics = tmp_path / "status.prom"
    code, document = run_json("status", *where(sandbox), "--metrics", metrics)
    assert code == 5, document
    assert value(metrics, "patchkeeper_fixes", state="unproven") == 2
    assert value(metrics, "patchkeeper_fixes", state="in_place") == 1


def test_a_fix_that_says_no_check_can_prove_it_is_in_place_on_a_green_run(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "install", {"app.py": "x = 1\n"})
    diff = diff_of(repo, {"app.py": "x = 2\n"})
    patches = write_patch_set(tmp_path / "set", {"fix.patch": patch_text(diff)})
    metrics = tmp_path / "apply.prom"
    code, document = run_json(
        "apply", "--install", repo, "--patches", patches, "--metrics", metrics
    )
    assert code == 0, document
    assert value(metrics, "patchkeeper_fixes", state="in_place") == 1
    assert value(metrics, "patchkeeper_fixes", state="unproven") == 0


def test_check_audit_smoke_and_doctor_write_their_own_families(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    sandbox.fetch_tags()
    check = tmp_path / "check.prom"
    code, document = run_json("check", *where(sandbox), "--tags", "v2026.*", "--metrics", check)
    promtool_accepts(check)
    assert value(check, "patchkeeper_run_exit_code") == code
    for target in document["targets"]:
        for outcome in {p["outcome"] for p in target["patches"]}:
            counted = sum(p["outcome"] == outcome for p in target["patches"])
            got = value(check, "patchkeeper_check_patches", ref=target["ref"], outcome=outcome)
            assert got == counted

    home = tmp_path / "home"
    plant_ledger(home)
    audit = tmp_path / "audit.prom"
    code, document = run_json("audit", "--home", home, "--metrics", audit)
    promtool_accepts(audit)
    assert code == 5
    assert value(audit, "patchkeeper_audit_anomalies", kind="never_started") == len(
        document["never_started"]
    )
    assert len(document["never_started"]) > 0

    smoke = tmp_path / "smoke.prom"
    code, document = run_json("smoke", *where(sandbox), "--metrics", smoke)
    promtool_accepts(smoke)
    verdicts = [c["verdict"] for c in document["checks"]]
    assert value(smoke, "patchkeeper_smoke_checks", verdict="pass") == verdicts.count("pass")
    assert not any(name == "patchkeeper_patches" for name, _, _ in samples(smoke))

    doctor = tmp_path / "doctor.prom"
    code, document = run_json("doctor", *where(sandbox), "--metrics", doctor)
    promtool_accepts(doctor)
    failed = sum(not f["ok"] for f in document["findings"])
    assert value(doctor, "patchkeeper_doctor_findings", answer="fail") == failed
    assert value(doctor, "patchkeeper_run_exit_code") == code


def test_a_run_that_stops_on_an_error_still_writes_its_exit_code(tmp_path: Path) -> None:
    metrics = tmp_path / "status.prom"
    metrics.write_text("patchkeeper_run_ok{command=\"status\"} 1\n")  # the last good run's
    proc = run_cli("status", "--install", tmp_path / "no-install", "--metrics", metrics)
    assert proc.returncode == 2
    promtool_accepts(metrics)
    assert value(metrics, "patchkeeper_run_exit_code", command="status") == 2
    assert value(metrics, "patchkeeper_run_ok") == 0
    assert {name for name, _, _ in samples(metrics)} == {
        "patchkeeper_run_exit_code",
        "patchkeeper_run_ok",
        "patchkeeper_run_timestamp_seconds",
    }


def test_a_metrics_file_in_a_missing_folder_is_refused_before_anything_is_written(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    before = {p.name: p.read_bytes() for p in (sandbox.install / "cron").glob("*.py")}
    proc = run_cli("apply", *where(sandbox), "--metrics", tmp_path / "nowhere" / "apply.prom")
    assert proc.returncode == 2
    assert f"{tmp_path / 'nowhere'}: no such folder" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert {p.name: p.read_bytes() for p in (sandbox.install / "cron").glob("*.py")} == before
    assert not (tmp_path / "nowhere").exists()


def test_fleet_report_writes_one_file_with_a_line_per_host(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    reports = tmp_path / "reports"
    (reports / "never-ran").mkdir(parents=True)
    (reports / "web-1").mkdir()
    sandbox.publish("v2026.9.24")
    proc = run_cli("update", *where(sandbox), "--json")
    (reports / "web-1" / "update.json").write_text(proc.stdout)
    metrics = tmp_path / "fleet.prom"
    code = run_cli("fleet", "report", reports, "--metrics", metrics).returncode
    promtool_accepts(metrics)
    assert value(metrics, "patchkeeper_run_exit_code", command="fleet report") == code == 5
    assert value(metrics, "patchkeeper_fleet_host_exit_code", host="web-1") == proc.returncode
    assert value(metrics, "patchkeeper_fleet_host_exit_code", host="never-ran") == -1
    assert value(metrics, "patchkeeper_fixes", host="web-1", state="in_place") == 3
