"""The smoke mechanism: real interpreter processes running tiny checks of our own.

Every way a check can go wrong (crash, timeout, output that is not a verdict, a "pass" that
is not one) must come back as `error` or `fail`, never as a pass.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import make_repo, patch_text, run_cli, write_patch_set

from patchkeeper.install.checkout.install import open_install
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.load import load_patch_set
from patchkeeper.patchset.settings import load_settings
from patchkeeper.proof.smoke.for_patches import checks_for_patches, run_for_patches
from patchkeeper.proof.smoke.interpreter import Interpreter, find_python
from patchkeeper.proof.smoke.one_check import run_check
from patchkeeper.proof.smoke.results import ERROR, FAIL, PASS, worst_verdict
from patchkeeper.proof.smoke.suite import run_checks

PY = Interpreter(Path(sys.executable))
VERDICT = "import json\ndef verdict(v, steps=(), **facts):\n" + (
    "    print(json.dumps({'check': 'x', 'verdict': v, 'steps': list(steps), **facts}))\n"
)


def write_check(folder: Path, name: str, body: str) -> Path:
    path = folder / "smoke" / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(VERDICT + textwrap.dedent(body))
    return path


@pytest.fixture
def install(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "install", {"upstream_mod.py": "def answer():\n    return 42\n"})


@pytest.fixture
def patch_dir(tmp_path: Path) -> Path:
    return write_patch_set(tmp_path / "patches", {})


def run(install: Path, path: Path, timeout: float = 30.0, relayed: list | None = None):
    def relay(name: str, text: str) -> None:
        if relayed is not None:
            relayed.append((name, text))

    return run_check(PY, install, path, timeout=timeout, on_progress=relay)


# ---------------------------------------------------------------- verdicts


def test_a_pass_with_steps_facts_and_progress(install: Path, patch_dir: Path) -> None:
    check = write_check(
        patch_dir,
        "good",
        """
        import sys
        print("progress: step one", file=sys.stderr, flush=True)
        print("noise that is not progress", file=sys.stderr)
        verdict("pass", [{"name": "one", "verdict": "pass", "detail": "fine", "seconds": 0.5},
                         {"name": "two", "verdict": "pass"}], latency_seconds=0.25)
    """,
    )
    relayed: list = []
    result = run(install, check, relayed=relayed)
    assert result.verdict == PASS, result
    assert [(s.name, s.verdict, s.seconds) for s in result.steps] == [
        ("one", "pass", 0.5),
        ("two", "pass", None),
    ]
    assert result.extra == {"latency_seconds": 0.25}
    assert relayed == [("good", "step one")]
    assert result.seconds > 0


def test_the_environment_is_the_installs_and_nothing_of_the_operators(
    install: Path, patch_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    operator_home = tmp_path / "operator-hermes"
    operator_home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(operator_home))
    monkeypatch.setenv("SECRET_TOKEN", "do-not-leak")
    check = write_check(
        patch_dir,
        "env",
        """
        import os, sys
        import upstream_mod
        home = os.environ["HERMES_HOME"]
        verdict("pass", cwd=os.getcwd(), home=home, home_empty=not os.listdir(home),
                user_home=os.environ["HOME"], secret=os.environ.get("SECRET_TOKEN"),
                answer=upstream_mod.answer(), bytecode=sys.dont_write_bytecode)
    """,
    )
    result = run(install, check)
    assert result.verdict == PASS, result
    facts = result.extra
    assert Path(facts["cwd"]) == install
    assert facts["answer"] == 42  # the install is on sys.path
    assert Path(facts["home"]) != operator_home and facts["home_empty"]
    assert not Path(facts["home"]).exists()  # the scratch HERMES_HOME is gone afterwards
    assert facts["user_home"] != os.environ.get("HOME")
    assert facts["secret"] is None
    assert facts["bytecode"] is True
    assert not list(install.rglob("__pycache__"))


# ---------------------------------------------------------------- could not check


def test_a_timeout_is_an_error_and_the_checks_helpers_die_with_it(
    install: Path, patch_dir: Path, tmp_path: Path
) -> None:
    pid_file = tmp_path / "helper.pid"
    check = write_check(
        patch_dir,
        "slow",
        f"""
        import subprocess, sys, time
        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open({str(pid_file)!r}, "w").write(str(helper.pid))
        time.sleep(60)
    """,
    )
    started = time.monotonic()
    result = run(install, check, timeout=1.5)
    assert time.monotonic() - started < 10
    assert result.verdict == ERROR
    assert result.detail.startswith("timed out after")
    helper = int(pid_file.read_text())
    for _ in range(50):
        if not _alive(helper):
            break
        time.sleep(0.1)
    assert not _alive(helper), "a helper process outlived its check"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_a_crash_is_an_error_that_names_the_exception(install: Path, patch_dir: Path) -> None:
    check = write_check(patch_dir, "crash", "raise RuntimeError('upstream moved')\n")
    result = run(install, check)
    assert result.verdict == ERROR
    assert result.detail == "crashed (exit 1): RuntimeError: upstream moved"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("print('all good')\n", "printed no JSON verdict"),
        ("print('[1, 2]')\n", "printed no JSON verdict"),
        ("verdict('maybe')\n", "bad verdict 'maybe' (expected pass, fail or error)"),
        ("print(json.dumps({'verdict': 'pass', 'steps': 'none'}))\n", "'steps' is not a list"),
        ("verdict('pass', [{'name': 's', 'verdict': 'ok'}])\n", "step 's' has verdict 'ok'"),
        ("verdict('pass', [{'verdict': 'pass'}])\n", "a step without a name"),
        ("verdict('pass')\nraise SystemExit(3)\n", "said pass but exited 3"),
    ],
)
def test_output_that_is_not_a_clean_verdict_is_an_error(
    install: Path, patch_dir: Path, body: str, reason: str
) -> None:
    result = run(install, write_check(patch_dir, "bad", body))
    assert result.verdict == ERROR
    assert reason in result.detail


def test_a_failing_or_unchecked_step_outweighs_the_checks_own_pass(
    install: Path, patch_dir: Path
) -> None:
    failing = write_check(patch_dir, "f", "verdict('pass', [{'name': 'a', 'verdict': 'fail'}])")
    erring = write_check(patch_dir, "e", "verdict('pass', [{'name': 'a', 'verdict': 'error'}])")
    assert run(install, failing).verdict == FAIL
    assert run(install, erring).verdict == ERROR


def test_a_real_failure_outweighs_a_step_that_could_not_check(
    install: Path, patch_dir: Path
) -> None:
    """A step that failed is a failure even when another could not check: never reported as
    "could not check" alone."""
    steps = "[{'name': 'a', 'verdict': 'error'}, {'name': 'b', 'verdict': 'fail'}]"
    both = write_check(patch_dir, "both", f"verdict('error', {steps})")
    assert run(install, both).verdict == FAIL
    assert worst_verdict([ERROR, FAIL, PASS]) == FAIL


def test_the_verdict_may_follow_upstream_noise_on_stdout(install: Path, patch_dir: Path) -> None:
    check = write_check(patch_dir, "noisy", "print('RuntimeWarning: ...')\nverdict('pass')\n")
    assert run(install, check).verdict == PASS


def test_a_missing_check_file_or_interpreter_is_an_error(install: Path, tmp_path: Path) -> None:
    assert "no check named nope" in run(install, tmp_path / "nope.py").detail
    check = write_check(tmp_path, "ok", "verdict('pass')\n")
    gone = Interpreter(tmp_path / "venv" / "bin" / "python")
    result = run_check(gone, install, check, timeout=5)
    assert result.verdict == ERROR and "could not start" in result.detail


# ---------------------------------------------------------------- the interpreter


def test_the_interpreter_is_the_configured_one_then_a_venv_then_ours(
    install: Path, patch_dir: Path
) -> None:
    opened = open_install(install)
    venv_python = install / "venv" / "bin" / "python"
    assert find_python(opened, load_settings(patch_dir)).note  # nothing found: a note
    venv_python.parent.mkdir(parents=True)
    venv_python.symlink_to(sys.executable)
    assert find_python(opened, load_settings(patch_dir)) == Interpreter(venv_python)
    (patch_dir / "patchkeeper.toml").write_text('[install]\npython = "bin/py3"\n')
    missing = find_python(opened, load_settings(patch_dir))  # never replaced by ours
    assert missing.path == install / "bin" / "py3" and not missing.found
    assert "[install] python bin/py3 not found" in missing.note
    (install / "bin").mkdir()
    (install / "bin" / "py3").symlink_to(sys.executable)
    assert find_python(opened, load_settings(patch_dir)).path == install / "bin" / "py3"


# ---------------------------------------------------------------- the command


def test_the_command_exit_codes_json_and_progress(install: Path, patch_dir: Path) -> None:
    (patch_dir / "patchkeeper.toml").write_text(
        f"[install]\npython = {json.dumps(sys.executable)}\n"
    )
    write_check(patch_dir, "good", "verdict('pass', [{'name': 'a', 'verdict': 'pass'}])\n")
    write_check(patch_dir, "bad", "raise ImportError('cannot import name adopt')\n")
    args = ("smoke", "--install", install, "--patches", patch_dir)
    one = run_cli(*args, "--check", "good")
    assert one.returncode == 0, one.stderr
    assert one.stdout.splitlines()[0].startswith("good: pass in ")
    assert "good: running with" in one.stderr
    both = run_cli(*args, "--json")
    assert both.returncode == 4
    document = json.loads(both.stdout)
    assert document["command"] == "smoke" and document["exit_code"] == 4
    verdicts = {c["name"]: (c["verdict"], c["detail"]) for c in document["checks"]}
    assert verdicts == {
        "bad": ("error", "crashed (exit 1): ImportError: cannot import name adopt"),
        "good": ("pass", ""),
    }
    text = run_cli(*args, "--check", "bad")
    assert text.returncode == 4
    assert text.stdout.startswith("bad: could not check in ")


def test_an_unknown_check_is_a_one_line_error(install: Path, patch_dir: Path) -> None:
    write_check(patch_dir, "good", "verdict('pass')\n")
    for wanted in ("nope", "../good"):
        proc = run_cli("smoke", "--install", install, "--patches", patch_dir, "--check", wanted)
        assert proc.returncode == 2
        assert proc.stderr.strip().endswith("no such smoke check (known: good)")
        assert len(proc.stderr.strip().splitlines()) == 1


# ---------------------------------------------------------------- what update runs


def test_update_runs_the_checks_applied_patches_name_plus_configured_ones(
    install: Path, tmp_path: Path
) -> None:
    diff = (
        "diff --git a/x.py b/x.py\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/x.py\n@@ -0,0 +1 @@\n+x = 1\n"
    )
    root = write_patch_set(
        tmp_path / "set",
        {
            "fix.patch": patch_text(diff, smoke="good, gone"),  # lint refuses '../escape'
            "other.patch": patch_text(diff.replace("x.py", "y.py"), smoke="never"),
        },
        config=f"[install]\npython = {json.dumps(sys.executable)}\n"
        '[smoke]\nchecks = ["extra", "good"]\n',
    )
    write_check(root, "good", "verdict('pass')\n")
    write_check(root, "extra", "verdict('pass')\n")
    patch_set, settings = load_patch_set(root), load_settings(root)
    results = [
        PatchResult("fix", "applied", variant="fix.patch"),
        PatchResult("other", "conflict", variant="other.patch"),
    ]
    names = checks_for_patches(patch_set, settings, results)
    assert names == ["good", "gone", "extra"]
    report = run_for_patches(open_install(install), settings, patch_set, results)
    assert [(r.name, r.verdict) for r in report.results] == [
        ("good", "pass"),
        ("gone", "error"),
        ("extra", "pass"),
    ]
    assert "no check named" in report.results[1].detail
    assert report.exit_code == 4
    # The loader refuses a path as a check name; run_checks still never leaves smoke/.
    escape = run_checks(open_install(install), settings, patch_set, ["../escape"])
    assert [(r.name, r.verdict, r.detail) for r in escape.results] == [
        ("../escape", "error", "'../escape' is not a check name")
    ]
