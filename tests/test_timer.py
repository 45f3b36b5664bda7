"""`patchkeeper timer` (issue 28, item 4): the shipped systemd units pass `systemd-analyze
verify` (user and system variants), `timer install` writes them naming this patchkeeper, the
ExecStart line run as systemd runs it keeps update's exit code and writes the report to the
state folder, and the cron line works for a user who may not write /var/log."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import GIT_ID, run_cli

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "patchkeeper" / "systemd"
UNITS = ("patchkeeper-update.service", "patchkeeper-update.timer")


def verify(folder: Path, variant: str, tmp_path: Path) -> None:
    """`systemd-analyze [--user] verify` on the units in FOLDER: exit 0 and no warning."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (Debian: apt-get install systemd)")
    runtime = tmp_path / "runtime"  # the user manager's runtime folder, which --user needs
    runtime.mkdir(mode=0o700, exist_ok=True)
    scope = ["--user"] if variant == "user" else []
    proc = subprocess.run(
        [analyze, *scope, "verify", *(f"./{name}" for name in UNITS)], cwd=folder,
        env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0 and not proc.stderr.strip(), proc.stdout + proc.stderr


@pytest.mark.parametrize("variant", ["user", "system"])
def test_the_shipped_units_pass_systemd_analyze_verify(variant: str, tmp_path: Path) -> None:
    verify(SHIPPED / variant, variant, tmp_path)
    service = (SHIPPED / variant / UNITS[0]).read_text()
    assert "StateDirectory=patchkeeper" in service and "/var/log" not in service


def test_timer_install_writes_the_user_units_naming_this_patchkeeper(tmp_path: Path) -> None:
    config = tmp_path / "config"
    env = {**os.environ, "XDG_CONFIG_HOME": str(config)}
    proc = subprocess.run([sys.executable, "-m", "patchkeeper", "timer", "install", "--user"],
                          env=env, capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    folder = config / "systemd" / "user"
    assert sorted(p.name for p in folder.iterdir()) == sorted(UNITS)
    assert "systemctl --user enable --now patchkeeper-update.timer" in proc.stdout
    assert f' sh "{sys.executable}" "-m" "patchkeeper"\n' in (folder / UNITS[0]).read_text()
    verify(folder, "user", tmp_path)


def test_timer_install_print_writes_nothing(tmp_path: Path) -> None:
    proc = run_cli("timer", "install", "--system", "--print", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# /etc/systemd/system/patchkeeper-update.service\n")
    assert "# /etc/systemd/system/patchkeeper-update.timer\n" in proc.stdout
    assert list(tmp_path.iterdir()) == []


def exec_start(service: str) -> list[str]:
    """The ExecStart= command as systemd hands it to exec: `$$` is `$`."""
    line = next(x for x in service.splitlines() if x.startswith("ExecStart="))
    return shlex.split(line.removeprefix("ExecStart=").replace("$$", "$"))


def test_the_service_command_keeps_the_exit_code_and_writes_the_report(tmp_path: Path) -> None:
    """What systemd runs, with what it sets (HOME, STATE_DIRECTORY), as this user: update on an
    install that is not there exits 2; the unit sees 2 through the pipe, and the report is in
    the state folder."""
    config = tmp_path / "config"
    env = {**os.environ, "XDG_CONFIG_HOME": str(config)}
    subprocess.run([sys.executable, "-m", "patchkeeper", "timer", "install", "--user"], env=env,
                   capture_output=True, check=True)  # fmt: skip
    command = exec_start((config / "systemd" / "user" / UNITS[0]).read_text())
    state = tmp_path / "state"
    state.mkdir()
    home = tmp_path / "home"  # no ~/.hermes/hermes-agent in it
    home.mkdir()
    run_env = {**os.environ, **GIT_ID, "HOME": str(home), "STATE_DIRECTORY": str(state)}
    run_env.pop("PATCHKEEPER_PATCHES", None)
    proc = subprocess.run(command, env=run_env, capture_output=True, text=True, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    report = json.loads((state / "last-update.json").read_text())
    assert report["command"] == "update" and report["exit_code"] == 2
    assert json.loads(proc.stdout) == report  # the journal gets the same document


def test_the_cron_line_runs_for_a_user_without_var_log(tmp_path: Path) -> None:
    proc = run_cli("timer", "cron")
    line = proc.stdout.strip()
    assert proc.returncode == 0 and "%" not in line and "/var/log" not in line
    schedule, command = line.split(" ", 5)[:5], line.split(" ", 5)[5]
    assert schedule == ["17", "4", "*", "*", "*"]
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": os.environ["PATH"], **GIT_ID}  # what cron gives
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    subprocess.run(["/bin/sh", "-c", command], env=env, check=False)
    report = home / ".local" / "state" / "patchkeeper" / "last-update.json"
    assert json.loads(report.read_text())["exit_code"] == 2  # no install in this home
