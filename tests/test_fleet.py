"""Fleet rollouts: the shipped playbook under a real `ansible-playbook`, on 4 local hosts.

Every host is its own install (a shallow clone of one bare origin, the practice upstream),
with its own patch set, HOME and HERMES_HOME, reached with `ansible_connection=local`. The
play runs `patchkeeper` through a per-fleet wrapper that calls this interpreter's module.
The patch sets carry no `Smoke:` headers and the play runs with patchkeeper_smoke=false
(the ledger check holds a lock for 7 s on purpose), except where the smoke step is the point.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from patchkeeper.demo.sandbox import OPERATOR, Sandbox
from patchkeeper.fleet import PLAYBOOK_NAME, playbook_text
from tests.helpers import GIT_ID, git
from tests.test_update import quiet

HOSTS = ("h1", "h2", "h3", "h4")

# Holds HOST's install lock until its stdin closes (how a second patchkeeper looks to us).
HOLDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from patchkeeper.install.locks.install_lock import install_lock
    with install_lock(Path(sys.argv[1]), "holder") as lock:
        lock.set_phase("busy-on-purpose")
        print("held", flush=True)
        sys.stdin.read()
    """
)


@dataclass(frozen=True)
class Host:
    name: str
    root: Path

    @property
    def install(self) -> Path:
        return self.root / "hermes-agent"

    @property
    def patches(self) -> Path:
        return self.root / "patches"

    @property
    def home(self) -> Path:  # HOME
        return self.root / "user"

    @property
    def hermes_home(self) -> Path:
        return self.root / "home"


@dataclass(frozen=True)
class Fleet:
    box: Sandbox  # its origin is every host's upstream
    root: Path
    hosts: tuple[Host, ...]

    @property
    def reports(self) -> Path:
        return self.root / "reports"

    @property
    def playbook(self) -> Path:
        return self.root / "rollout" / PLAYBOOK_NAME

    @property
    def inventory(self) -> Path:
        return self.root / "inventory.yml"

    def host(self, name: str) -> Host:
        return next(h for h in self.hosts if h.name == name)


def pk(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """patchkeeper on the controller."""
    return subprocess.run(
        [sys.executable, "-m", "patchkeeper", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
        check=False,
    )


def pk_host(host: Host, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "patchkeeper", *args, "--install", str(host.install),
         "--patches", str(host.patches)],
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ID, "NO_COLOR": "1", "HOME": str(host.home),
             "HERMES_HOME": str(host.hermes_home)},
        check=False,
    )  # fmt: skip


def _make_host(box: Sandbox, root: Path, name: str) -> Host:
    host = Host(name, root / name)
    host.root.mkdir(parents=True)
    git(host.root, "clone", "-q", "--depth=1", "--branch=main", box.origin.as_uri(), "hermes-agent")
    git(host.install, "config", "user.name", OPERATOR[0])
    git(host.install, "config", "user.email", OPERATOR[1])
    shutil.copytree(box.patches, host.patches)
    config = box.config.read_text()
    config = config.replace(json.dumps(str(box.install)), json.dumps(str(host.install)))
    (host.patches / "patchkeeper.toml").write_text(config)
    host.home.mkdir()
    host.hermes_home.mkdir()
    proc = pk_host(host, "apply")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return host


@pytest.fixture
def fleet(sandbox: Sandbox, tmp_path: Path) -> Fleet:
    """4 hosts at v2026.9.14 with both patches applied; the playbook written out; an inventory."""
    box = quiet(sandbox)
    root = tmp_path / "fleet"
    hosts = tuple(_make_host(box, root, name) for name in HOSTS)
    wrapper = root / "bin" / "patchkeeper"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m patchkeeper "$@"\n')
    wrapper.chmod(0o755)
    inventory = {
        "all": {
            "hosts": {
                host.name: {
                    "ansible_connection": "local",
                    "ansible_python_interpreter": sys.executable,
                    "patchkeeper_bin": str(wrapper),
                    "patchkeeper_install": str(host.install),
                    "patchkeeper_patches": str(host.patches),
                    "patchkeeper_environment": {
                        "HOME": str(host.home),
                        "HERMES_HOME": str(host.hermes_home),
                        "NO_COLOR": "1",
                    },
                }
                for host in hosts
            }
        }
    }
    made = Fleet(box, root, hosts)
    made.inventory.write_text(json.dumps(inventory, indent=2))
    written = pk("fleet", "playbook", "--out", str(made.playbook.parent))
    assert written.returncode == 0, written.stderr
    return made


def play(
    fleet: Fleet, *extra: str, cwd: Path | None = None, pwd: bool = True, **variables: Any
) -> subprocess.CompletedProcess[str]:
    """`ansible-playbook` of the shipped playbook on the fleet's inventory, run from CWD
    (default: the fleet's root) with PWD set as a shell sets it."""
    cwd = cwd or fleet.root
    settings = {
        "patchkeeper_reports_dir": str(fleet.reports),
        "patchkeeper_smoke": False,
        "patchkeeper_busy_delay": 1,
        **variables,
    }
    ansible = fleet.root / "ansible"
    env = {
        **os.environ,
        **GIT_ID,
        "ANSIBLE_HOME": str(ansible),
        "ANSIBLE_LOCAL_TEMP": str(ansible / "tmp"),
        "ANSIBLE_REMOTE_TMP": str(ansible / "remote-tmp"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_STDOUT_CALLBACK": "default",
        "LC_ALL": "C.UTF-8",  # ansible-core refuses to start under a locale that is not UTF-8
        "PWD": str(cwd),
    }
    if not pwd:  # started by a program, not a shell: no PWD to say where the operator is
        del env["PWD"]
    proc = subprocess.run(
        [sys.executable, "-m", "ansible", "playbook", "-i", str(fleet.inventory),
         str(fleet.playbook), "-e", json.dumps(settings), *extra],
        cwd=cwd, capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    (fleet.root / "last-play.log").write_text(proc.stdout + proc.stderr)
    return proc


def fleet_report(fleet: Fleet) -> tuple[int, dict[str, Any], str]:
    as_json = pk("fleet", "report", str(fleet.reports), "--json")
    as_text = pk("fleet", "report", str(fleet.reports))
    assert as_json.returncode == as_text.returncode, as_json.stderr + as_text.stderr
    return as_json.returncode, json.loads(as_json.stdout), as_text.stdout


def state(host: Host) -> dict[str, str]:
    """What "byte-for-byte unchanged" is judged by: HEAD, the tree hash of the whole work
    tree (tracked and untracked, through a scratch index), the stash list, the tags."""
    scratch = host.root / "scratch-index"
    shutil.copyfile(host.install / ".git" / "index", scratch)
    env = {**os.environ, "GIT_INDEX_FILE": str(scratch)}
    subprocess.run(["git", "add", "-A"], cwd=host.install, env=env, check=True)
    tree = subprocess.run(
        ["git", "write-tree"], cwd=host.install, env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    scratch.unlink()
    return {
        "head": git(host.install, "rev-parse", "HEAD"),
        "tree": tree,
        "stash": git(host.install, "stash", "list"),
        "status": git(host.install, "status", "--porcelain", "--untracked-files=all"),
    }


def version_of(host: Host) -> str:
    """What the host's own `hermes version` says (from 0.21.5 on: its install stamp)."""
    proc = subprocess.run(
        ["./hermes", "version"], cwd=host.install, capture_output=True, text=True, check=True,
        env={**os.environ, "HERMES_HOME": str(host.hermes_home)},
    )  # fmt: skip
    return proc.stdout.strip()


def rows_by_host(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["host"]: row for row in document["hosts"]}


def test_a_clean_rollout_updates_every_host(fleet: Fleet) -> None:
    fleet.box.publish("v2026.9.24")
    proc = play(fleet, patchkeeper_preview="origin/main")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    for host in fleet.hosts:
        assert version_of(host) == "0.21.5", host.name
        assert git(host.install, "stash", "list") == ""
        status = pk_host(host, "status")
        assert status.returncode == 0, status.stdout
    code, document, text = fleet_report(fleet)
    assert code == 0, text
    rows = rows_by_host(document)
    assert sorted(rows) == list(HOSTS)
    for row in rows.values():
        assert (row["version_before"], row["version_after"]) == ("0.21.3", "0.21.5")
        assert {p["name"]: p["outcome"] for p in row["patches"]} == {
            "adoption-retry": "applied-offset",
            "schema-once": "applied-offset",
            "heartbeat-fence": "upstream-has-it",
        }
        assert row["exit_code"] == 0
    print(text)


def reports_of(fleet: Fleet) -> dict[str, bytes]:
    return {
        path.relative_to(fleet.reports).as_posix(): path.read_bytes()
        for path in sorted(fleet.reports.rglob("*.json"))
    }


def test_a_conflicting_canary_halts_the_rollout_with_the_rest_untouched(fleet: Fleet) -> None:
    fleet.box.publish("v2026.11.9")  # 0.24.0 reformats `_connect`: schema-once conflicts
    before = {host.name: state(host) for host in fleet.hosts}  # origin/main not fetched yet

    dry = play(fleet, "--check", patchkeeper_preview="origin/main")
    assert dry.returncode == 2, dry.stdout[-4000:]
    rollout = dry.stdout.split("PLAY [Roll", 1)[1]
    assert "h1: exit 3 (check): does not apply on origin/main: schema-once" in rollout  # fetched
    assert "[h2]" not in rollout
    assert {host.name: state(host) for host in fleet.hosts} == before
    assert not fleet.reports.exists()  # check mode writes nothing, on the controller either

    proc = play(fleet, patchkeeper_preview="origin/main")
    assert proc.returncode == 2, proc.stdout[-4000:]
    rollout = proc.stdout.split("PLAY [Roll", 1)[1]
    assert "h1: exit 3 (update): schema-once would not apply on origin/main" in rollout
    assert "update anyway: patchkeeper update --preview origin/main --force" in rollout
    assert "[h2]" not in rollout.split("PLAY RECAP")[0]
    after = {host.name: state(host) for host in fleet.hosts}
    assert after == before  # the preview stopped the canary too, before it touched anything
    for host in fleet.hosts:
        assert version_of(host) == "0.21.3"
        status = pk_host(host, "status")
        assert status.stdout.count("already-applied") == 2, status.stdout  # still in place
        if host.name == "h1":  # its update was asked for and did not happen: never green
            assert status.returncode == 5
            assert "did not happen: stopped at its preview of origin/main" in status.stdout
        else:
            assert status.returncode == 0, status.stdout

    code, document, text = fleet_report(fleet)
    assert code == 3, text
    rows = rows_by_host(document)
    assert sorted(rows) == list(HOSTS)
    canary = rows["h1"]
    assert canary["exit_code"] == 3 and canary["report"] is True
    assert {p["name"]: p["outcome"] for p in canary["patches"]}["schema-once"] == "conflict"
    assert canary["patches_on"] == "origin/main"  # the preview's outcomes: h1 kept its patches
    assert "conflict (preview)" in text and "stopped at the preview" in text
    for name in ("h2", "h3", "h4"):
        assert rows[name]["report"] is False and rows[name]["exit_code"] is None
    assert document["counts"] == {"hosts": 4, "no_report": 3, "exit_3": 1}
    lines = text.splitlines()
    assert [line.split()[0] for line in lines[1:5]] == list(HOSTS)
    assert sum("no report" in line for line in lines[1:5]) == 3


def test_a_relative_reports_dir_is_where_the_operator_stands(fleet: Fleet) -> None:
    """docs/fleet.md's `-e patchkeeper_reports_dir=reports/A`, then `patchkeeper fleet report
    reports/A`, both from the same folder (not the playbook's): the same reports, and the halt
    message names where they are."""
    fleet.box.publish("v2026.11.9")  # the canary conflicts: one host is enough
    proc = play(fleet, patchkeeper_preview="origin/main", patchkeeper_reports_dir="reports/A")
    assert proc.returncode == 2, proc.stdout[-4000:]
    assert f"report: {fleet.root}/reports/A/h1/update.json" in proc.stdout
    assert not (fleet.playbook.parent / "reports").exists()
    report = subprocess.run([sys.executable, "-m", "patchkeeper", "fleet", "report", "reports/A"],
                            cwd=fleet.root, capture_output=True, text=True, check=False,
                            env={**os.environ, "NO_COLOR": "1"})  # fmt: skip
    assert report.returncode == 3, report.stdout + report.stderr
    assert "conflict (preview)" in report.stdout and "fleet: 4 hosts" in report.stdout

    unplaced = play(fleet, patchkeeper_reports_dir="reports/B", pwd=False)
    assert unplaced.returncode == 2 and "is relative and PWD is not set" in unplaced.stdout
    assert not (fleet.root / "reports" / "B").exists()


def hold_lock(host: Host) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(host.install / ".git" / "patchkeeper")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def test_a_busy_host_is_retried_then_halts_the_rest_and_a_rerun_resumes(fleet: Fleet) -> None:
    fleet.box.publish("v2026.9.24")
    h3, h4 = fleet.host("h3"), fleet.host("h4")
    before = {host.name: state(host) for host in (h3, h4)}
    holder = hold_lock(h3)
    try:
        proc = play(
            fleet,
            patchkeeper_preview="origin/main",
            patchkeeper_wait=1,
            patchkeeper_busy_retries=2,
        )
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=10)
    assert proc.returncode == 2, proc.stdout[-4000:]
    retries = [line for line in proc.stdout.splitlines() if line.startswith("FAILED - RETRYING")]
    assert len(retries) == 2 and all("[h3]" in line for line in retries), retries
    assert "h3: exit 6 (not ready)" in proc.stdout
    assert f"held by pid {holder.pid}" in proc.stdout
    # h4 shares h3's batch: it proved itself ready, but nothing of that batch was updated.
    assert {host.name: state(host) for host in (h3, h4)} == before
    assert [version_of(host) for host in fleet.hosts] == ["0.21.5", "0.21.5", "0.21.3", "0.21.3"]

    code, document, text = fleet_report(fleet)
    assert code == 5, text
    rows = rows_by_host(document)
    assert [rows[name]["exit_code"] for name in HOSTS] == [0, 0, 6, None]
    assert "busy" in rows["h3"]["error"] and rows["h4"]["report"] is False
    assert "h3: exit 6 (fleet ready)" in text and "busy: held by pid" in text

    # Resume: the same command again. h1 and h2 report exit 0 and still stand so: skipped.
    done = {name: (fleet.reports / name / "update.json").read_bytes() for name in ("h1", "h2")}
    heads = {name: state(fleet.host(name)) for name in ("h1", "h2")}
    again = play(fleet, patchkeeper_preview="origin/main")
    assert again.returncode == 0, again.stdout[-4000:]
    for name in ("h1", "h2"):
        assert f"{name}: skipped: its report says exit 0" in again.stdout
        assert (fleet.reports / name / "update.json").read_bytes() == done[name]
        assert state(fleet.host(name)) == heads[name]
    assert [version_of(host) for host in fleet.hosts] == ["0.21.5"] * 4
    code, document, text = fleet_report(fleet)
    assert code == 0, text
    assert [row["exit_code"] for row in document["hosts"]] == [0, 0, 0, 0]


def test_the_smoke_step_proves_the_host_after_its_update(fleet: Fleet) -> None:
    fleet.box.publish("v2026.9.24")
    proc = play(fleet, "--limit", "h1", patchkeeper_smoke=True)
    assert proc.returncode == 0, proc.stdout[-4000:]
    smoke = json.loads((fleet.reports / "h1" / "smoke.json").read_text())
    assert smoke["exit_code"] == 0 and smoke["checks"][0]["verdict"] == "pass"
    code, document, text = fleet_report(fleet)
    assert rows_by_host(document)["h1"]["smoke"] == "pass"
    assert [row["host"] for row in document["hosts"]] == ["h1"]  # --limit: only h1's folder
    assert code == 0, text


# ---------------------------------------------------------------- the commands alone


def test_playbook_is_printed_or_written_and_never_overwrites_an_edited_copy(tmp_path: Path) -> None:
    printed = pk("fleet", "playbook")
    assert printed.returncode == 0 and printed.stdout == playbook_text()
    for line in ("serial: [1, \"25%\", \"100%\"]", "max_fail_percentage: 0"):
        assert line in printed.stdout
    out = tmp_path / "rollout"
    assert pk("fleet", "playbook", "--out", str(out)).returncode == 0
    assert (out / PLAYBOOK_NAME).read_text() == playbook_text()
    assert pk("fleet", "playbook", "--out", str(out)).returncode == 0  # the same: fine
    (out / PLAYBOOK_NAME).write_text(playbook_text() + "# mine\n")
    refused = pk("fleet", "playbook", "--out", str(out))
    assert refused.returncode == 2 and "differs" in refused.stderr
    assert (out / PLAYBOOK_NAME).read_text().endswith("# mine\n")


def _doc(**fields: Any) -> str:
    return json.dumps({"schema": "patchkeeper/1", "patches": [], **fields})


def test_report_makes_a_row_for_every_host_folder_torn_or_empty(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    for name in ("a-ok", "b-torn", "c-never", "d-busy", "e-smoke", "f-garbage"):
        (reports / name).mkdir(parents=True)
    update = _doc(
        command="update",
        exit_code=0,
        update_done=True,
        install={
            "version_before": "0.21.3",
            "version_before_from": "hermes_cli/__init__.py: 0.21.3",
            "version_after": "0.21.5",
            "version_after_from": "install-stamp.json: baseVersion 0.21.5",
        },
        patches=[{"name": "schema-once", "outcome": "applied-offset"}],
        smoke={"status": "pass"},
        leftovers=[{"id": "1", "action": "dropped"}],
        attention=[],
    )
    (reports / "a-ok" / "update.json").write_text(update)
    (reports / "b-torn" / "update.json").write_text(update[: len(update) // 2])
    (reports / "d-busy" / "update.json").write_text(
        _doc(command="fleet", exit_code=6, error="/srv/x: busy: held by pid 42")
    )
    (reports / "e-smoke" / "update.json").write_text(update)
    (reports / "e-smoke" / "smoke.json").write_text(
        _doc(command="smoke", exit_code=4, checks=[{"name": "ledger", "verdict": "fail"}])
    )
    (reports / "f-garbage" / "update.json").write_text('["not", "a", "report"]')

    code, document = 0, {}
    proc = pk("fleet", "report", str(reports), "--json")
    code, document = proc.returncode, json.loads(proc.stdout)
    assert code == 4  # e-smoke's failed smoke check outranks the 5s of the rest
    assert document["schema"] == "patchkeeper/1" and document["command"] == "fleet report"
    rows = rows_by_host(document)
    assert list(rows) == ["a-ok", "b-torn", "c-never", "d-busy", "e-smoke", "f-garbage"]
    assert rows["a-ok"]["exit_code"] == 0 and rows["a-ok"]["leftovers"] == []
    assert (rows["a-ok"]["version_before_from"], rows["a-ok"]["version_after_from"]) == (
        "hermes_cli/__init__.py: 0.21.3",
        "install-stamp.json: baseVersion 0.21.5",
    )  # a version in a JSON document names its source
    assert rows["b-torn"]["version_after_from"] is None
    assert rows["b-torn"]["report"] is False and "torn" in rows["b-torn"]["problem"]
    assert rows["c-never"]["report"] is False and "never ran" in rows["c-never"]["problem"]
    assert rows["d-busy"]["exit_code"] == 6 and rows["d-busy"]["patches"] == []
    assert rows["e-smoke"]["exit_code"] == 4 and rows["e-smoke"]["smoke"] == "fail"
    assert rows["f-garbage"]["report"] is False
    assert document["counts"] == {
        "hosts": 6, "no_report": 3, "exit_0": 1, "exit_4": 1, "exit_6": 1,
    }  # fmt: skip

    text = pk("fleet", "report", str(reports)).stdout
    table = text.split("\n\n")[0].splitlines()
    assert len(table) == 7  # the header and one row per host
    assert "b-torn" in table[2] and "no report: update.json is torn" in table[2]
    assert "c-never" in table[3] and "no report: never ran" in table[3]
    assert "0.21.3 -> 0.21.5" in table[1] and "applied-offset" in table[1]
    assert "error: /srv/x: busy: held by pid 42" in text
    assert text.rstrip().endswith("no report: 3 (exit 4)")


def test_report_of_a_folder_without_hosts_is_a_usage_error(tmp_path: Path) -> None:
    missing = pk("fleet", "report", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "no such folder" in missing.stderr
    empty = pk("fleet", "report", str(tmp_path), "--json")
    assert empty.returncode == 2 and json.loads(empty.stdout)["exit_code"] == 2


def test_an_update_without_a_json_document_fails_the_canary_by_its_exit_status(
    fleet: Fleet,
) -> None:
    """`--timeout 0` is a usage error that prints no document: exit 2 stands in, and the
    report brought back says so, with the last line patchkeeper wrote on stderr."""
    fleet.box.publish("v2026.9.24")
    proc = play(fleet, patchkeeper_timeout=0)
    assert proc.returncode == 2, proc.stdout[-4000:]
    assert "h1: exit 2 (update): " in proc.stdout and "'0'" in proc.stdout
    assert [version_of(host) for host in fleet.hosts] == ["0.21.3"] * 4
    code, document, text = fleet_report(fleet)
    rows = rows_by_host(document)
    assert rows["h1"]["exit_code"] == 2 and "--timeout" in rows["h1"]["error"]
    assert [rows[name]["report"] for name in HOSTS] == [True, False, False, False]
    assert code == 5, text
