"""`[install] version_file`: the version an install states in its own source, tags or not."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchkeeper.install.checkout.install import install_version, open_install
from patchkeeper.patchset.settings import load_settings
from tests.helpers import (
    commit_files,
    diff_of,
    git,
    make_repo,
    outcomes,
    patch_text,
    run_cli,
    run_json,
    write_patch_set,
)

LINES = "".join(f"line {n}\n" for n in range(1, 21))
INIT = "hermes_cli/__init__.py"
HERMES = '[install]\nversion_file = "hermes_cli/__init__.py"\n'


def init(version: str) -> str:
    return f'"""Hermes."""\n\n__version__ = "{version}"\n'


def repo_at(path: Path, version: str, tag: str | None = None) -> Path:
    return make_repo(path, {"app.py": LINES, INIT: init(version)}, tag=tag)


def patch_set(root: Path, repo: Path, config: str = HERMES) -> Path:
    """One fix for the 0.21 series only: it is chosen only when the version is known."""
    diff = diff_of(repo, {"app.py": LINES.replace("line 5\n", "line 5 fixed\n")})
    return write_patch_set(root, {"fix.patch": patch_text(diff, applies_to="~=0.21.0")}, config)


def test_an_install_without_tags_reports_its_files_version(tmp_path: Path) -> None:
    upstream = repo_at(tmp_path / "up", "0.21.3", tag="v0.21.3")
    install = tmp_path / "install"
    git(tmp_path, "clone", "-q", "--no-tags", "--depth", "1", f"file://{upstream}", str(install))
    assert git(install, "tag") == ""
    code, doc = run_json(
        "status", "--install", install, "--patches", patch_set(tmp_path / "ps", upstream)
    )
    assert (code, outcomes(doc)) == (5, {"fix": "pending"})  # 5: not applied yet
    assert (doc["install"]["version"], doc["install"]["version_source"]) == ("0.21.3", "file")

    untold = patch_set(tmp_path / "untold", upstream, config="")
    code, doc = run_json("status", "--install", install, "--patches", untold)
    assert (code, doc["install"]["version"]) == (5, None)
    assert doc["patches"][0]["undecided"] is True


def test_the_work_tree_file_is_read_edits_included(tmp_path: Path) -> None:
    repo = repo_at(tmp_path / "up", "0.21.3")
    (repo / INIT).write_text(init("0.21.4"))
    code, doc = run_json("status", "--install", repo, "--patches", patch_set(tmp_path / "ps", repo))
    assert (code, doc["install"]["version"]) == (5, "0.21.4")


def test_check_reads_each_refs_own_file(tmp_path: Path) -> None:
    repo = repo_at(tmp_path / "up", "0.21.3", tag="v0.21.3")
    commit_files(repo, {INIT: init("0.22.0")}, "release", tag="v2026.7.20")
    git(repo, "rm", "-q", INIT)
    git(repo, "commit", "-q", "-m", "no version file")
    git(repo, "tag", "v0.23.0")
    patches = patch_set(tmp_path / "ps", repo)
    code, doc = run_json(
        "check", "--install", repo, "--patches", patches,
        "--ref", "v0.21.3", "--ref", "v2026.7.20", "--ref", "v0.23.0",
    )  # fmt: skip
    assert code == 0
    assert {t["ref"]: t["version"] for t in doc["targets"]} == {
        "v0.21.3": "0.21.3",
        "v2026.7.20": "0.22.0",  # the file, not the CalVer tag
        "v0.23.0": "0.23.0",  # no file there: git describe
    }
    assert {t["ref"]: t["patches"][0]["outcome"] for t in doc["targets"]} == {
        "v0.21.3": "applied",
        "v2026.7.20": "not-applicable",
        "v0.23.0": "not-applicable",
    }


def test_a_calver_tag_never_outranks_the_files_version(tmp_path: Path) -> None:
    repo = repo_at(tmp_path / "up", "0.21.3", tag="v2026.7.20")
    code, doc = run_json("status", "--install", repo, "--patches", patch_set(tmp_path / "ps", repo))
    assert (doc["install"]["version"], doc["install"]["version_source"]) == ("0.21.3", "file")
    assert (code, outcomes(doc)) == (5, {"fix": "pending"})

    untold = patch_set(tmp_path / "untold", repo, config="")
    code, doc = run_json("status", "--install", repo, "--patches", untold)
    assert (doc["install"]["version"], doc["install"]["version_source"]) == (
        "2026.7.20",
        "describe",
    )
    assert (code, outcomes(doc)) == (0, {"fix": "not-applicable"})  # what the file prevents


def test_a_named_group_and_a_pattern_of_ones_own(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "up", {"app.py": LINES, "VERSION.txt": "release: 0.21.7 (beta)\n"})
    config = (
        '[install]\nversion_file = "VERSION.txt"\n'
        "version_pattern = '^(?P<word>release): (?P<version>\\S+)'\n"
    )
    code, doc = run_json(
        "status", "--install", repo, "--patches", patch_set(tmp_path / "ps", repo, config)
    )
    assert (code, doc["install"]["version"]) == (5, "0.21.7")


@pytest.mark.parametrize(
    ("file_text", "reason"),
    [
        ("VERSION = 1\n", "hermes_cli/__init__.py: no __version__ literal"),
        (init("next"), "hermes_cli/__init__.py: 'next' is not a PEP 440 version"),
        (None, "hermes_cli/__init__.py: no such file"),
    ],
)
def test_no_version_in_the_file_falls_back_to_describe_and_says_why(
    tmp_path: Path, file_text: str | None, reason: str
) -> None:
    repo = make_repo(tmp_path / "up", {"app.py": LINES}, tag="v0.21.1")
    files = {INIT: file_text} if file_text is not None else {"app.py": LINES + "more\n"}
    commit_files(repo, files, "release", tag="v0.21.2")
    patches = patch_set(tmp_path / "ps", repo)
    info = install_version(open_install(repo), load_settings(patches))
    assert (str(info.version), info.source) == ("0.21.2", "describe")
    assert info.text == f"{reason}; git describe: v0.21.2"
    assert (info.tried, info.answered) == ((reason,), "git describe: v0.21.2")


def test_an_unknown_version_names_every_reason(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "up", {"app.py": LINES})
    proc = run_cli("status", "--install", repo, "--patches", patch_set(tmp_path / "ps", repo))
    assert proc.returncode == 5
    assert (
        "version  unknown (hermes_cli/__init__.py: no such file; git describe: no release tag "
        "reachable"
        in proc.stdout
    )


BAD_SETTINGS = {
    "bad regex": (
        HERMES + "version_pattern = '__version__ = \"([0-9.]+'\n",
        "install.version_pattern is not a valid regex: missing ), unterminated subpattern",
    ),
    "no group": (
        HERMES + "version_pattern = '__version__'\n",
        "needs exactly one capture group, or one named 'version' (it has 0)",
    ),
    "two groups": (HERMES + "version_pattern = '(\\d+)\\.(\\d+)'\n", "(it has 2)"),
    "not a string": (HERMES + "version_pattern = 3\n", "install.version_pattern must be a string"),
    "outside": (
        '[install]\nversion_file = "../VERSION"\n',
        "install.version_file '../VERSION': path leaves the tree",
    ),
    "absolute": ('[install]\nversion_file = "/etc/os-release"\n', "absolute path"),
    "empty": ('[install]\nversion_file = ""\n', "empty path"),
    "pattern alone": (
        "[install]\nversion_pattern = '(.+)'\n",
        "install.version_pattern needs install.version_file",
    ),
}


@pytest.mark.parametrize(("config", "words"), BAD_SETTINGS.values(), ids=BAD_SETTINGS)
def test_a_bad_version_setting_is_one_line_exit_2(tmp_path: Path, config: str, words: str) -> None:
    repo = repo_at(tmp_path / "up", "0.21.3")
    patches = patch_set(tmp_path / "ps", repo, config)
    proc = run_cli("status", "--install", repo, "--patches", patches)
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert str(patches / "patchkeeper.toml") in line and words in line
    lint = run_cli("lint", "--patches", patches)
    assert lint.returncode == 2 and words in lint.stdout
