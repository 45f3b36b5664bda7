"""The formats patchkeeper writes, each read by a real consumer (issue 19, item 4): JUnit XML
against the Jenkins JUnit schema (xmlschema), the fleet playbook under ansible-lint's
production profile, the GitHub step summary's Markdown, `-` as stdout, colour as no-color.org
and git say, and help texts that say what the commands do."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.helpers import (
    GIT_ID,
    commit_files,
    diff_of,
    make_repo,
    patch_text,
    run_cli,
    write_patch_set,
)

ROOT = Path(__file__).resolve().parent.parent
XSD = ROOT / "tests" / "fixtures" / "jenkins-junit.xsd"
LINES = "".join(f"line {n}\n" for n in range(1, 21))
ODD_NAME = "fix`*_|odd"  # a patch name with Markdown's special characters


@pytest.fixture
def upstream(tmp_path: Path) -> tuple[Path, Path]:
    """An upstream with no version tag (so a ranged patch is undecided), a patch that conflicts
    there, one upstream has, and one that cannot be decided."""
    repo = make_repo(tmp_path / "up", {"a.py": LINES, "b.py": LINES, "c.py": LINES})
    conflict = diff_of(repo, {"a.py": LINES.replace("line 5\n", "line 5 fixed\n")})
    has_it = diff_of(repo, {"b.py": LINES.replace("line 9\n", "line 9 fixed\n")})
    ranged = diff_of(repo, {"c.py": LINES.replace("line 2\n", "line 2 fixed\n")})
    moved = {
        "a.py": LINES.replace("line 5\n", "line 5 upstream\n"),
        "b.py": LINES.replace("line 9\n", "line 9 fixed\n"),
    }
    commit_files(repo, moved, "upstream moved")
    patches = write_patch_set(
        tmp_path / "ps",
        {
            f"{ODD_NAME}.patch": patch_text(conflict),
            "has-it.patch": patch_text(has_it),
            "ranged.patch": patch_text(ranged, applies_to=">=1.0"),
        },
    )
    return repo, patches


# ---------------------------------------------------------------- JUnit


def test_junit_is_valid_against_the_jenkins_schema_and_says_each_thing_once(
    upstream: tuple[Path, Path], tmp_path: Path
) -> None:
    xmlschema = pytest.importorskip("xmlschema")
    repo, patches = upstream
    target = tmp_path / "out.xml"
    proc = run_cli("check", "--install", repo, "--patches", patches, "--ref", "HEAD",
                   "--ref", "HEAD~1", "--junit", target)  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    xmlschema.XMLSchema(str(XSD)).validate(str(target))
    root = ET.parse(target).getroot()
    for element in (root, *root.iter("testsuite")):
        assert element.get("errors") == "0" and re.fullmatch(r"\d+\.\d{3}", element.get("time"))
    cases = list(root.iter("testcase"))
    assert len(cases) == 6 and all(re.fullmatch(r"\d+\.\d{3}", c.get("time")) for c in cases)
    failures = {c.get("name"): c.find("failure") for c in cases if c.find("failure") is not None}
    assert {f.get("type") for f in failures.values()} == {"conflict", "undecided"}
    for failure in failures.values():
        assert not failure.get("message").startswith(f"{failure.get('type')}:"), failure.attrib
    skipped = [c.find("skipped") for c in cases if c.find("skipped") is not None]
    assert skipped and all(not s.get("message").startswith("upstream-has-it") for s in skipped)


def test_junit_dash_is_stdout(upstream: tuple[Path, Path], tmp_path: Path) -> None:
    repo, patches = upstream
    proc = run_cli("check", "--install", repo, "--patches", patches, "--ref", "HEAD",
                   "--junit", "-", cwd=tmp_path)  # fmt: skip
    assert proc.stdout.startswith("<?xml") and ET.fromstring(proc.stdout).tag == "testsuites"
    assert not (tmp_path / "-").exists()
    both = run_cli("check", "--install", repo, "--patches", patches, "--ref", "HEAD",
                   "--junit", "-", "--json")  # fmt: skip
    assert both.returncode == 2 and "both write to stdout" in both.stderr


# ---------------------------------------------------------------- GitHub step summary


def test_step_summary_escapes_markdown_in_patch_names(
    upstream: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, patches = upstream
    summary = tmp_path / "summary.md"
    env = {**os.environ, **GIT_ID, "GITHUB_STEP_SUMMARY": str(summary), "NO_COLOR": "1"}
    subprocess.run(
        [sys.executable, "-m", "patchkeeper", "check", "--install", str(repo), "--patches",
         str(patches), "--ref", "HEAD", "--format", "github"],
        env=env, capture_output=True, check=False,
    )  # fmt: skip
    text = summary.read_text(encoding="utf-8")
    assert "**fix\\`\\*\\_\\|odd**" in text, text
    assert f"**{ODD_NAME}**" not in text


# ---------------------------------------------------------------- fleet playbook


def test_fleet_playbook_out_dash_is_stdout(tmp_path: Path) -> None:
    proc = run_cli("fleet", "playbook", "--out", "-", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("# patchkeeper fleet rollout")
    assert list(tmp_path.iterdir()) == []


def test_the_shipped_playbook_is_clean_under_ansible_lint_production(tmp_path: Path) -> None:
    lint = Path(sys.executable).parent / "ansible-lint"
    if not lint.exists():
        pytest.skip("ansible-lint is not installed (pip install -e '.[test]')")
    playbook = tmp_path / "patchkeeper-rollout.yml"
    playbook.write_text(run_cli("fleet", "playbook").stdout)
    env = {**os.environ, "NO_COLOR": "1", "ANSIBLE_HOME": str(tmp_path / "ansible"),
           "PATH": f"{lint.parent}{os.pathsep}{os.environ.get('PATH', '')}"}  # fmt: skip
    proc = subprocess.run(
        [str(lint), "--offline", "--profile", "production", "--nocolor", playbook.name],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


# ---------------------------------------------------------------- colour


def tty_output(args: list[str], env: dict[str, str]) -> bytes:
    """What ARGS print on a terminal (a real pseudo-terminal as stdout)."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "patchkeeper", *args],
            stdout=follower, stderr=subprocess.DEVNULL, env=env,
        )  # fmt: skip
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the child is done
                break
            if not chunk:
                break
            chunks.append(chunk)
        proc.wait(timeout=60)
        return b"".join(chunks)
    finally:
        os.close(leader)


@pytest.mark.parametrize(
    ("setting", "coloured"),
    [({}, True), ({"NO_COLOR": ""}, True), ({"NO_COLOR": "1"}, False), ({"TERM": "dumb"}, False)],
)
def test_colour_follows_no_color_and_term(
    upstream: tuple[Path, Path], setting: dict[str, str], coloured: bool
) -> None:
    repo, patches = upstream
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    env |= {**GIT_ID, "TERM": "xterm", **setting}
    out = tty_output(["check", "--install", str(repo), "--patches", str(patches), "--ref", "HEAD"],
                     env)  # fmt: skip
    assert b"conflict" in out
    assert (b"\x1b[" in out) is coloured, out[:400]


# ---------------------------------------------------------------- help texts


def help_of(*words: str) -> str:
    """The help of WORDS as click prints it (in-process: fifteen commands, one interpreter)."""
    from click.testing import CliRunner

    from patchkeeper.cli import cli

    result = CliRunner().invoke(cli, [*words, "--help"], prog_name="patchkeeper")
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_top_level_help_shows_every_summary_whole() -> None:
    from patchkeeper.cli import SUMMARIES

    shown = help_of().split("Commands:", 1)[1]
    assert "..." not in shown
    for summary in SUMMARIES.values():
        assert summary in shown, summary


def test_every_patches_help_says_the_real_order() -> None:
    from patchkeeper.cli import COMMANDS

    order = (
        "default: PATCHKEEPER_PATCHES, else the set the install was last applied from, else "
        "the bundled Hermes patch set"
    )
    commands = [[name] for name in COMMANDS if name != "fleet"] + [["fleet", "ready"]]
    seen = 0
    for words in commands:
        text = help_of(*words)
        if "--patches DIRECTORY" not in text:
            continue
        seen += 1
        if words in (["lint"], ["doctor"]):  # these two do not look further
            assert "default: the bundled Hermes patch set" in text, words
            assert "PATCHKEEPER_PATCHES" not in text, words
        else:
            assert order in text, words
    assert seen >= 12


def test_usage_says_what_is_optional_and_what_repeats() -> None:
    assert "[list|show|restore|drop] [ID]" in help_of("leftovers")
    assert "A path to capture (repeatable)" in help_of("record")
    assert "`-`: stdout" in help_of("check") and "or `-`: print it on stdout" in help_of(
        "fleet", "playbook"
    )

