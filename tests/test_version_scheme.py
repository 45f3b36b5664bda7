"""Version schemes beyond PEP 440 (issue 17, item 4): `[install] version_scheme` in
patchkeeper.toml, PEP 440 the default. Debian/OpenSSH `9.2p1`, SemVer pre-releases."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from patchkeeper.patchset.version_sources import TagNames
from patchkeeper.patchset.versions import PEP440, SCHEMES, tag_to_version
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


# Real version pairs (issue 27), each ordered as the library that defines the scheme says:
# -1 the first is lower, 0 equal in precedence, 1 higher.
DEBIAN_PAIRS = [
    ("1.6.43+dfsg-3", "1.6.43-2", 1),  # libpng: `+` sorts after the end of the upstream part
    ("1.0a", "1.0~a", 1),
    ("1.0~~a", "1.0~a", -1),
    ("1.0~~a", "1.0~~", 1),
    ("0.9.8za", "0.9.8z", 1),  # OpenSSL's letters
    ("0.9.8zh", "0.9.8za", 1),
    ("0.9.8zh", "1.0.0", -1),
    ("1.0-0", "1.0", 0),
    ("1.0-1", "1.0", 1),
    ("1.0.0", "1.0", 1),
    ("1:0.1", "2.0", 1),
    ("2.41~rc1", "2.41", -1),
    ("9.2p1", "9.2", 1),
    ("9.2p1", "9.10p1", -1),
    ("1.2.3-1ubuntu1", "1.2.3-1", 1),
    ("1.2.3-1+deb12u1", "1.2.3-1", 1),
    ("1.2.3-1~bpo11+1", "1.2.3-1", -1),
    ("7.88.1-10+deb12u5", "7.88.1-10+deb12u12", -1),
    ("2.38.1-5+deb12u3", "2.38.1-5+b1", 1),
    ("1.0+git20240101", "1.0", 1),
    ("1.0~git20240101", "1.0", -1),
    ("3.0.11-1~deb12u2", "3.0.11-1", -1),
]
SEMVER_PAIRS = [  # semver.org's own precedence example, then the issue's
    ("1.0.0-alpha", "1.0.0-alpha.1", -1),
    ("1.0.0-alpha.1", "1.0.0-alpha.beta", -1),
    ("1.0.0-alpha.beta", "1.0.0-beta", -1),
    ("1.0.0-beta", "1.0.0-beta.2", -1),
    ("1.0.0-beta.2", "1.0.0-beta.11", -1),
    ("1.0.0-beta.11", "1.0.0-rc.1", -1),
    ("1.0.0-rc.1", "1.0.0", -1),
    ("1.0.0-alpha.beta", "1.0.0-alpha", 1),
    ("1.0.0-alpha", "1.0.0-canary.7", -1),
    ("1.0.0+build.1", "1.0.0", 0),
    ("1.0.0-rc.1+build.1", "1.0.0-rc.1", 0),
    ("1.0.0-0", "1.0.0-0.a", -1),
    ("1.0.0-1", "1.0.0-a", -1),  # numeric identifiers below alphanumeric ones
    ("1.0.0-Z", "1.0.0-a", -1),  # ASCII order
    ("1.0.0-a-b", "1.0.0-a", 1),
    ("1.2.3-canary.7", "1.2.2", 1),
    ("1.9.0", "1.10.0", -1),
    ("2.0.0", "1.99.99", 1),
]


def _order(a: object, b: object) -> int:
    return (a > b) - (a < b)  # type: ignore[operator]


@pytest.mark.parametrize(("a", "b", "expected"), DEBIAN_PAIRS)
def test_debian_orders_as_dpkg(a: str, b: str, expected: int) -> None:
    from debian.debian_support import Version as DebianVersion

    assert _order(DebianVersion(a), DebianVersion(b)) == expected  # the reference says so
    assert _order(DEBIAN.parse(a), DEBIAN.parse(b)) == expected
    assert str(DEBIAN.parse(a)) == a  # shown as written


@pytest.mark.parametrize(("a", "b", "expected"), SEMVER_PAIRS)
def test_semver_precedence_as_the_spec(a: str, b: str, expected: int) -> None:
    import semver

    assert semver.Version.parse(a).compare(b) == expected  # the reference says so
    assert _order(SEMVER.parse(a), SEMVER.parse(b)) == expected


def _debian_corpus() -> list[str]:
    uppers = ["1", "1.0", "1.0.0", "1.0a", "1.0~a", "1.0~~a", "1.0~", "1.0+dfsg", "1.0.1~rc1",
              "0.9.8za", "0.9.8z", "1.00", "1.0b", "1.0.", "1a1", "1~", "10", "9.9p1"]
    revisions = ["", "-0", "-1", "-1ubuntu1", "-1~bpo1", "-1+b1", "-10", "-2"]
    return [f"{epoch}{u}{r}" for epoch in ("", "1:") for u in uppers for r in revisions]


def test_every_pair_of_a_debian_corpus_orders_as_python_debian() -> None:
    from debian.debian_support import Version as DebianVersion

    texts = _debian_corpus()
    ours = [DEBIAN.parse(t) for t in texts]
    theirs = [DebianVersion(t) for t in texts]
    wrong = [
        (texts[i], texts[j])
        for i in range(len(texts))
        for j in range(len(texts))
        if _order(ours[i], ours[j]) != _order(theirs[i], theirs[j])
    ]
    assert not wrong, wrong[:5]


def test_every_pair_of_a_semver_corpus_orders_as_python_semver() -> None:
    import semver

    pres = ["", "-0", "-1", "-01a", "-a", "-alpha", "-alpha.1", "-alpha.beta", "-alpha.10",
            "-alpha.2", "-beta", "-rc.1", "-canary.7", "-Z", "-a-b", "-1.a"]
    texts = [f"{r}{p}{b}" for r in ("1.0.0", "1.0.1", "0.9.10") for p in pres
             for b in ("", "+build.1")]  # fmt: skip
    ours = [SEMVER.parse(t) for t in texts]
    wrong = [
        (a, b)
        for i, a in enumerate(texts)
        for j, b in enumerate(texts)
        if _order(ours[i], ours[j]) != semver.Version.parse(a).compare(b)
    ]
    assert not wrong, wrong[:5]


@pytest.mark.parametrize(
    ("scheme", "spec", "inside", "outside"),
    [
        ("debian", ">=1.6.43-2,<1.6.44", ["1.6.43+dfsg-3", "1.6.44~rc1"], ["1.6.43-1", "1.6.44"]),
        ("debian", ">=0.9.8za", ["0.9.8zh", "1.0.0"], ["0.9.8z", "0.9.8"]),
        ("debian", "<2.41", ["2.41~rc1", "2.40"], ["2.41", "1:1.0"]),
        ("semver", ">=1.0.0-alpha.beta,<1.0.0", ["1.0.0-beta", "1.0.0-canary.7"],
         ["1.0.0-alpha", "1.0.0+build.1"]),
        ("semver", "==1.0.0", ["1.0.0+build.1"], ["1.0.0-rc.1"]),
    ],
)  # fmt: skip
def test_ranges_hold_the_schemes_order(
    scheme: str, spec: str, inside: list[str], outside: list[str]
) -> None:
    from packaging.specifiers import SpecifierSet

    text, why = SCHEMES[scheme].specifiers(spec)
    assert why is None
    ranges = SpecifierSet(text)
    for version in inside:
        assert ranges.contains(SCHEMES[scheme].parse(version), prereleases=True), version
    for version in outside:
        assert not ranges.contains(SCHEMES[scheme].parse(version), prereleases=True), version


def test_wildcards_are_refused_outside_pep440() -> None:
    assert DEBIAN.specifiers("==1.6.*")[1] == (
        "'==1.6.*': wildcards, ~= and === are PEP 440's; write a range (>=, <) of debian versions"
    )


def test_pep440_stays_the_default_and_knows_no_p1() -> None:
    assert tag_to_version("v9.2p1") is None
    assert tag_to_version("v9.2p1", DEBIAN) == DEBIAN.parse("9.2p1")
    assert str(tag_to_version("v9.2p1", DEBIAN)) == "9.2p1"
    described = TagNames(scheme=DEBIAN).described("v9.2p1-3-gabcdef1")
    assert str(described) == "9.2p1+3.gabcdef1"
    assert DEBIAN.parse("9.2p1") < described < DEBIAN.parse("9.2p2")
    assert PEP440.specifiers(">=9.2p1") == (">=9.2p1", None)  # left to packaging to refuse
    assert tag_to_version("v0.22.0-canary.7") == Version("0.22.0.dev7")  # Hermes' canaries


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
    text = (patches / "fix/new.patch").read_text().replace(">=9.6p1", ">=9.6_q")
    (patches / "fix/new.patch").write_text(text)
    lint = run_cli("lint", "--patches", patches)
    assert lint.returncode == 2
    assert "new.patch:2: Applies-To: '9.6_q' is not a debian version" in lint.stdout


def test_an_unknown_scheme_is_refused(tmp_path: Path) -> None:
    _, patches = openssh_like(tmp_path)
    (patches / "patchkeeper.toml").write_text('[install]\nversion_scheme = "calver"\n')
    proc = run_cli("lint", "--patches", patches)
    assert proc.returncode == 2
    assert "install.version_scheme must be one of 'pep440', 'semver', 'debian'" in proc.stdout


def test_since_is_read_in_the_sets_scheme(tmp_path: Path) -> None:
    """`--since 9.3p1` in a Debian-scheme set: the tags from 9.3p1 on, in dpkg's order."""
    repo, patches = openssh_like(tmp_path)
    code, doc = run_json("check", "--install", repo, "--patches", patches, "--since", "9.3p1")
    assert code == 0
    assert [(t["ref"], t["version"]) for t in doc["targets"]] == [
        ("v9.3p1", "9.3p1"),
        ("v9.6p1", "9.6p1"),
    ]
    bad = run_cli("check", "--install", repo, "--patches", patches, "--since", "9.3_p1")
    assert bad.returncode == 2 and "'9.3_p1' is not a debian version" in bad.stderr


@pytest.mark.parametrize(
    ("scheme", "huge"),
    [("debian", "1." + "9" * 5000), ("semver", "1.0.0-" + "9" * 5000)],
)
def test_a_number_past_the_int_limit_is_no_version_not_a_traceback(
    tmp_path: Path, scheme: str, huge: str
) -> None:
    """A [tags] release with a 5000-digit number: int() raised ValueError (exit 1, 'internal
    error') in the debian and semver keys; it is no version, one line naming the file."""
    _, patches = openssh_like(tmp_path)
    config = f'[install]\nversion_scheme = "{scheme}"\n[tags]\n"v1" = "{huge}"\n'
    (patches / "patchkeeper.toml").write_text(config)
    proc = run_cli("lint", "--patches", patches)
    assert proc.returncode == 2 and "internal error" not in proc.stdout + proc.stderr
    assert f"tags.'v1' must be a {scheme} version string" in proc.stdout + proc.stderr
