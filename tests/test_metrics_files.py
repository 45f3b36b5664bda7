"""`--metrics FILE` as node_exporter's textfile collector meets it: several commands' files in
one folder (no series in two of them), and a file the machine refuses to write (disk full, a
read-only folder: injected with strace) is one line, exit 7, no temp file left."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from patchkeeper.demo.ledger import plant_ledger
from patchkeeper.demo.sandbox import Sandbox
from tests.helpers import GIT_ID, run_cli
from tests.test_metrics import promtool_accepts, samples, where

STRACE = shutil.which("strace")


def test_files_of_several_commands_in_one_folder_share_no_series(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The collector refuses a series that two files both hold ("was collected before with
    the same name and label values") and keeps whichever it read first: status' file could
    show an older update's result beside update's own. The last update's figures were
    written without the `command` label by update, status and apply alike."""
    folder = tmp_path / "textfile"
    folder.mkdir()
    sandbox.publish("v2026.9.24")
    for command in ("update", "status", "apply"):
        proc = run_cli(command, *where(sandbox), "--metrics", folder / f"{command}.prom")
        assert proc.returncode in (0, 4, 5), proc.stdout + proc.stderr
    owners: dict[tuple[str, frozenset[tuple[str, str]]], str] = {}
    for path in sorted(folder.glob("*.prom")):
        promtool_accepts(path)
        for name, labels, _ in samples(path):
            key = (name, frozenset(labels.items()))
            assert key not in owners, f"{name}{labels} in {owners.get(key)} and {path.name}"
            owners[key] = path.name
    assert {key[0] for key in owners} >= {"patchkeeper_update_ok", "patchkeeper_fixes"}


@pytest.mark.skipif(STRACE is None, reason="strace is needed to inject the write's failure")
@pytest.mark.parametrize(
    ("syscall", "error", "said"),
    [("write", "ENOSPC", "No space left on device"), ("openat", "EROFS", "Read-only file system")],
)
def test_a_metrics_file_the_machine_refuses_is_one_line_exit_7_and_no_temp_file(
    tmp_path: Path, syscall: str, error: str, said: str
) -> None:
    """The failed write was told, then tried again (and told again) as the run's failure."""
    home = tmp_path / "home"
    plant_ledger(home)
    folder = tmp_path / "textfile"
    folder.mkdir()
    metrics = folder / "audit.prom"
    # strace -D keeps the shell's pid for patchkeeper, so the temp file's name is known.
    script = (
        f'exec {STRACE} -D -f -qq -o /dev/null -P "{folder}/.audit.prom.$$.tmp" '
        f"-e trace={syscall} -e inject={syscall}:error={error} "
        f'{sys.executable} -m patchkeeper audit --home "{home}" --metrics "{metrics}"'
    )
    proc = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True,
        env={**os.environ, **GIT_ID, "NO_COLOR": "1"}, check=False,
    )  # fmt: skip
    assert proc.returncode == 7, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [
        f"patchkeeper: error: {metrics}: {said}; what was being written was left as it was"
    ]
    assert list(folder.iterdir()) == []


def test_the_fleet_counts_a_hosts_fixes_as_the_hosts_own_report_does(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """A host whose update wrote the fixes and whose smoke check then failed: its own file
    says `unproven`, the fleet's said all in place (the host's smoke verdict was left out),
    and an alert on unproven fixes stayed quiet on the fleet's file."""
    check = sandbox.patches / "smoke" / "ledger_schema.py"
    check.write_text('import json\nprint(json.dumps({"check": "ledger_schema", '
                     '"verdict": "fail", "steps": []}))\n')  # fmt: skip
    sandbox.publish("v2026.9.24")
    reports = tmp_path / "reports"
    (reports / "web-1").mkdir(parents=True)
    own = tmp_path / "update.prom"
    proc = run_cli("update", *where(sandbox), "--json", "--metrics", own)
    assert proc.returncode == 4, proc.stderr
    (reports / "web-1" / "update.json").write_text(proc.stdout)
    fleet = tmp_path / "fleet.prom"
    assert run_cli("fleet", "report", reports, "--metrics", fleet).returncode == 4
    promtool_accepts(fleet)

    def fixes(path: Path) -> dict[str, float]:
        return {got["state"]: v for n, got, v in samples(path) if n == "patchkeeper_fixes"}

    assert fixes(own)["unproven"] > 0
    assert fixes(fleet) == fixes(own)


@pytest.mark.parametrize("given", ["", "folder"])
def test_a_metrics_path_that_names_no_file_is_one_usage_error(tmp_path: Path, given: str) -> None:
    """`--metrics ""` was "internal error: ValueError" (exit 1); a folder got the usage error,
    then a second one from writing the failure's metrics into it ("metrics not written")."""
    (tmp_path / "folder").mkdir()
    proc = run_cli("status", "--metrics", given, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    said = [x for x in proc.stderr.splitlines() if x.startswith(("Error:", "patchkeeper:"))]
    assert len(said) == 1 and "'--metrics'" in said[0], proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["folder"]


def test_a_metrics_path_that_is_a_fifo_or_device_is_refused_and_left_as_it_was(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """`--metrics` replaces its file by a rename: given a FIFO (or, as root, /dev/null) it put
    a plain file where the FIFO or device was. Refused before the command runs; the writer
    never renames over anything but a regular file either."""
    from patchkeeper.install.system.durable import atomic_write
    from patchkeeper.model.errors import PatchkeeperError

    fifo = tmp_path / "pipe.prom"
    os.mkfifo(fifo)
    proc = run_cli("status", *where(sandbox), "--metrics", fifo)
    assert proc.returncode == 2, proc.stderr
    said = [x for x in proc.stderr.splitlines() if x.startswith(("Error:", "patchkeeper:"))]
    assert len(said) == 1 and "not a regular file" in said[0], proc.stderr
    assert fifo.is_fifo()
    with pytest.raises(PatchkeeperError, match="not a regular file"):
        atomic_write(fifo, b"x\n")
    assert fifo.is_fifo() and not list(tmp_path.glob(".pipe.prom.*"))  # no temp file left
