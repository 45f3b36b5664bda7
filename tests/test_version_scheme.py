"""Version schemes beyond PEP 440 (issue 17, item 4): `[install] version_scheme` in
patchkeeper.toml, PEP 440 the default. Debian/OpenSSH `9.2p1`, SemVer pre-releases."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from patchkeeper.patchset.versions import PEP440, SCHEMES, describe_to_version, tag_to_version
from tests.helpers import (
    commit_files,
    diff_of,
    make_repo,
    outcomes,
    patch_text,
    run_cli,
    run_json,
    write_patch_set,
)

DEBIAN, SEMVER = SCHEMES["debian"], SCHEMES["semver"]


@pytest.mark.parametrize(
    ("text", "lower", "higher"),
    [
        ("9.2p1", "9.2", "9.3"),
        ("9.2p2", "9.2p1", "9.3p1"),
        ("2.41~rc1", "2.40", "2.41"),
        ("1:1.0", "9.9", "1:1.1"),
        ("1.6.43+dfsg-1", "1.6.42", "1.6.44"),
    ],
)
def test_debian_versions_sort_as_debian_means(text: str, lower: str, higher: str) -> None:
    version = DEBIAN.parse(text)
    assert version is not None
    assert DEBIAN.parse(lower) < version < DEBIAN.parse(higher)


@pytest.mark.parametrize(
    ("text", "lower", "higher"),
    [
        ("1.2.3-rc.1", "1.2.3-beta.2", "1.2.3"),
        ("1.2.3-beta.2", "1.2.3-alpha", "1.2.3-rc.1"),
        ("1.2.3-canary.7", "1.2.2", "1.2.3-alpha"),
        ("1.2.3+build.5", "1.2.2", "1.2.4"),
    ],
)
def test_semver_pre_releases_sort_before_their_release(text: str, lower: str, higher: str) -> None:
    version = SEMVER.parse(text)
    assert version is not None
    assert SEMVER.parse(lower) < version < SEMVER.parse(higher)


def test_pep440_stays_the_default_and_knows_no_p1() -> None:
    assert tag_to_version("v9.2p1") is None
    assert tag_to_version("v9.2p1", DEBIAN) == Version("9.2.post1")
    assert describe_to_version("v9.2p1-3-gabcdef1", DEBIAN) == Version("9.2.post1+3.gabcdef1")
    assert PEP440.specifiers(">=9.2p1") == (">=9.2p1", None)  # left to packaging to refuse


LINES = "".join(f"line {n}\n" for n in range(1, 21))


def openssh_like(tmp_path: Path) -> tuple[Path, Path]:
    """An upstream tagged v9.2p1, v9.3p1, v9.6p1; a fix in two variants by range."""
    repo = make_repo(tmp_path / "up", {"sshd.c": LINES}, tag="v9.2p1")
    old = patch_text(
        diff_of(repo, {"sshd.c": LINES.replace("line 5\n", "line 5 fixed\n")}),
        applies_to=">=9.2p1,<9.6p1",
    )
    commit_files(repo, {"NEWS": "9.3p1\n"}, "9.3p1", tag="v9.3p1")
    commit_files(repo, {"sshd.c": LINES.replace("line 5\n", "line five\n")}, "9.6", tag="v9.6p1")
    new = patch_text(
        diff_of(repo, {"sshd.c": LINES.replace("line 5\n", "line five fixed\n")}),
        applies_to=">=9.6p1",
    )
    patches = write_patch_set(
        tmp_path / "ps",
        {"fix/old.patch": old, "fix/new.patch": new},
        config='[install]\nversion_scheme = "debian"\n',
    )
    return repo, patches


def test_applies_to_in_openssh_versions_picks_the_variant(tmp_path: Path) -> None:
    repo, patches = openssh_like(tmp_path)
    lint = run_cli("lint", "--patches", patches)
    assert lint.returncode == 0, lint.stdout
    code, doc = run_json("check", "--install", repo, "--patches", patches, "--tags", "v*")
    assert code == 0, doc
    picked = {t["ref"]: t["patches"][0]["variant"] for t in doc["targets"]}
    assert picked == {"v9.2p1": "fix/old.patch", "v9.3p1": "fix/old.patch",
                      "v9.6p1": "fix/new.patch"}  # fmt: skip
    code, doc = run_json("apply", "--install", repo, "--patches", patches)
    assert code == 0 and outcomes(doc) == {"fix": "applied"}
    assert "line five fixed" in (repo / "sshd.c").read_text()


def test_without_the_scheme_p1_is_a_problem_with_file_and_line(tmp_path: Path) -> None:
    _, patches = openssh_like(tmp_path)
    (patches / "patchkeeper.toml").unlink()
    lint = run_cli("lint", "--patches", patches)
    assert lint.returncode == 2
    assert "old.patch:2: invalid PEP 440 specifier set '>=9.2p1,<9.6p1'" in lint.stdout


def test_a_bad_version_in_the_scheme_names_file_and_line(tmp_path: Path) -> None:
    _, patches = openssh_like(tmp_path)
    text = (patches / "fix/new.patch").read_text().replace(">=9.6p1", ">=9.6q")
    (patches / "fix/new.patch").write_text(text)
    lint = run_cli("lint", "--patches", patches)
    assert lint.returncode == 2
    assert "new.patch:2: Applies-To: '9.6q' is not a debian version" in lint.stdout


def test_an_unknown_scheme_is_refused(tmp_path: Path) -> None:
    _, patches = openssh_like(tmp_path)
    (patches / "patchkeeper.toml").write_text('[install]\nversion_scheme = "calver"\n')
    proc = run_cli("lint", "--patches", patches)
    assert proc.returncode == 2
    assert "install.version_scheme must be one of 'pep440', 'semver', 'debian'" in proc.stdout
