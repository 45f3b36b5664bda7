"""docs/patchkeeper.1 (issue 28, item 6): it names every command with its summary, every exit
code the README names, and groff reads it without a warning."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from patchkeeper.cli import COMMANDS, SUMMARIES

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "patchkeeper.1").read_text(encoding="utf-8")


def section(name: str) -> str:
    return PAGE.split(f"\n.SH {name}\n", 1)[1].split("\n.SH ", 1)[0]


def test_the_man_page_lists_every_command_with_its_summary() -> None:
    listed = dict(re.findall(r"^\.TP\n\.B (\S+)\n(.+)$", section("COMMANDS"), re.M))
    assert set(listed) == set(COMMANDS)
    for name, summary in listed.items():
        said = SUMMARIES[name].replace("`", "").replace("--", "\\-\\-")
        assert summary == said, (name, summary, said)


def test_the_man_page_has_every_exit_code_of_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    codes = set(re.findall(r"^\| (\d) \|", readme, re.M))
    assert codes and codes == set(re.findall(r"^\.B (\d)$", section("EXIT STATUS"), re.M))


def test_groff_reads_the_man_page_without_a_warning() -> None:
    groff = shutil.which("groff")
    if groff is None:
        pytest.skip("groff is not installed")
    proc = subprocess.run([groff, "-man", "-ww", "-z", str(ROOT / "docs" / "patchkeeper.1")],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
