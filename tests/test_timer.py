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


def timer_install(config: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": config, "HOME": str(cwd / "home")}
    argv = [sys.executable, "-m", "patchkeeper", "timer", "install", *args]
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("in_the_way", ["file-for-config", "folder-for-timer"])
def test_timer_install_with_something_in_the_way_is_one_line_and_writes_nothing(
    tmp_path: Path, in_the_way: str
) -> None:
    """A file where the unit folder goes was "internal error: NotADirectoryError" (exit 1); a
    folder where the timer goes left the service written alone."""
    config = tmp_path / "config"
    if in_the_way == "file-for-config":
        config.write_text("not a folder\n")
    else:
        (config / "systemd" / "user" / UNITS[1]).mkdir(parents=True)
    before = files_under(tmp_path)
    proc = timer_install(str(config), "--user", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and "nothing written" in proc.stderr, proc.stderr
    assert files_under(tmp_path) == before


def test_timer_install_refuses_both_variants_and_ignores_a_relative_xdg_config_home(
    tmp_path: Path,
) -> None:
    """--user --system took the last one silently; a relative XDG_CONFIG_HOME (invalid by the
    XDG spec) put the units under the current folder, where no systemd looks."""
    # --print: before the fix --system won and, as root, wrote /etc/systemd/system
    proc = timer_install(str(tmp_path / "c"), "--user", "--system", "--print", cwd=tmp_path)
    assert proc.returncode == 2 and "not both" in proc.stderr and proc.stderr.count("\n") == 1
    assert files_under(tmp_path) == []

    proc = timer_install("relative", "--user", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert files_under(tmp_path / "home") == [
        ".config", ".config/systemd", ".config/systemd/user",
        f".config/systemd/user/{UNITS[0]}", f".config/systemd/user/{UNITS[1]}",
    ]  # fmt: skip
    assert not (tmp_path / "relative").exists()


def test_the_upgrade_script_snippet_of_update_md_runs_as_written_in_a_new_home(
    tmp_path: Path,
) -> None:
    """docs/update.md's "upgrade script of your own": for a user without ~/.local/state the
    redirect failed, `update` never ran and the script exited 1. Run here with a stand-in
    `patchkeeper` that prints a document and exits 3: the script's status must be 3."""
    text = (ROOT / "docs" / "update.md").read_text()
    block = text.split("In an upgrade script of your own:", 1)[1].split("```sh\n", 1)[1]
    snippet = block.split("```", 1)[0]
    stand_in = tmp_path / "bin" / "patchkeeper"
    stand_in.parent.mkdir()
    stand_in.write_text('#!/bin/sh\necho \'{"exit_code": 3}\'\nexit 3\n')
    stand_in.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": f"{stand_in.parent}:{os.environ['PATH']}"}
    proc = subprocess.run(["bash", "-c", snippet], env=env, capture_output=True, text=True,
                          check=False)  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    (report,) = [p for p in home.rglob("*.json")]
    assert json.loads(report.read_text()) == {"exit_code": 3}
