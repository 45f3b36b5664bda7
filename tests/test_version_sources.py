"""The chain of version sources (`[[install.version_source]]`) and the tag table (`[tags]`):
Hermes 0.21.5+ keeps its version only in an untracked install-stamp.json, its tags are CalVer.
Every repository here is real git; installs are shallow clones without tags, as the release
channel makes them."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

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
STAMP = "install-stamp.json"
CHAIN = """[install]
[[install.version_source]]
json = "install-stamp.json"
key = "baseVersion"
distance_key = "distance"
commit_key = "commit"

[[install.version_source]]
file = "hermes_cli/__init__.py"

[[install.version_source]]
describe = true

[tags]
"v2026.8.31" = "0.21.0"
"v2026.9.14" = "0.21.3"
"v2026.9.21" = "0.21.4"
"v2026.9.24" = "0.21.5"
"""


def init(version: str | None) -> str:
    literal = f'__version__ = "{version}"\n' if version else "from x import __version__\n"
    return f'"""Hermes."""\n\n{literal}'


def patch_set(root: Path, repo: Path, config: str = CHAIN) -> Path:
    """One fix for 0.21.5 and later only: chosen only when the version says 0.21.5+."""
    diff = diff_of(repo, {"app.py": LINES.replace("line 5\n", "line 5 fixed\n")})
    return write_patch_set(root, {"fix.patch": patch_text(diff, applies_to=">=0.21.5")}, config)


def calver_upstream(path: Path) -> Path:
    """Releases tagged as Hermes tags them: 0.21.0 .. 0.21.4 with the literal, 0.21.5 without,
    and a later tag [tags] does not list."""
    repo = make_repo(path, {"app.py": LINES, INIT: init("0.21.0")}, tag="v2026.8.31")
    commit_files(repo, {INIT: init("0.21.2")}, "0.21.2", tag="v2026.9.11")
    commit_files(repo, {INIT: init("0.21.3")}, "0.21.3", tag="v2026.9.14")
    commit_files(repo, {INIT: init("0.21.4")}, "0.21.4", tag="v2026.9.21")
    commit_files(repo, {INIT: init(None)}, "0.21.5", tag="v2026.9.24")
    commit_files(repo, {"NEWS": "later\n"}, "0.21.6?", tag="v2026.9.30")
    return repo


def release_install(tmp_path: Path, upstream: Path, ref: str) -> Path:
    """A shallow, tagless install of REF, as the release channel makes one: one pinned
    commit fetched with `--depth 1 --no-tags`, checked out detached."""
    install = tmp_path / "install"
    sha = git(upstream, "rev-parse", f"{ref}^{{commit}}").strip()
    git(tmp_path, "init", "-q", str(install))
    git(install, "fetch", "-q", "--depth", "1", "--no-tags", f"file://{upstream}", sha)
    git(install, "checkout", "-q", "--detach", "FETCH_HEAD")
    assert git(install, "tag") == ""
    return install


def stamp(install: Path, **fields: object) -> None:
    (install / STAMP).write_text(json.dumps(fields))


def test_a_shallow_install_reads_its_version_from_the_untracked_stamp(tmp_path: Path) -> None:
    upstream = calver_upstream(tmp_path / "up")
    install = release_install(tmp_path, upstream, "v2026.9.24")
    head = git(install, "rev-parse", "HEAD").strip()
    patches = patch_set(tmp_path / "ps", upstream)

    code, doc = run_json("status", "--install", install, "--patches", patches)
    assert doc["install"]["version"] is None  # no stamp yet: nothing can tell
    assert doc["install"]["version_not_from"] == [
        "install-stamp.json: no such file",
        "hermes_cli/__init__.py: no __version__ literal",
        "git describe: no release tag reachable (a shallow clone without tags?)",
    ]

    stamp(install, baseVersion="0.21.5", commit=head, distance=0, commitDate=1790000000)
    code, doc = run_json("status", "--install", install, "--patches", patches)
    assert (code, outcomes(doc)) == (5, {"fix": "pending"})
    assert doc["install"]["version"] == "0.21.5"
    assert doc["install"]["version_source"] == "json"
    assert (
        doc["install"]["version_from"]
        == f"install-stamp.json: baseVersion 0.21.5, commit {head[:12]}"
    )
    assert doc["install"]["version_not_from"] == []
    assert git(install, "status", "--porcelain", "--ignored=no").strip() == f"?? {STAMP}"

    stamp(install, baseVersion="0.21.5", commit=head, distance=3160)  # a main-channel install
    text = run_cli("status", "--install", install, "--patches", patches).stdout
    assert (
        f"version  0.21.5+3160.g{head[:7]} (from install-stamp.json: baseVersion 0.21.5, "
        "distance 3160" in text
    )


def test_a_stale_or_placeholder_stamp_is_passed_over_and_said(tmp_path: Path) -> None:
    upstream = calver_upstream(tmp_path / "up")
    install = release_install(tmp_path, upstream, "v2026.9.21")  # 0.21.4: the literal
    old = git(upstream, "rev-parse", "v2026.9.14").strip()
    stamp(install, baseVersion="0.21.5", commit=old)
    _, doc = run_json(
        "status", "--install", install, "--patches", patch_set(tmp_path / "ps", upstream)
    )
    assert (doc["install"]["version"], doc["install"]["version_source"]) == ("0.21.4", "file")
    head = git(install, "rev-parse", "HEAD").strip()
    assert doc["install"]["version_not_from"] == [
        f"install-stamp.json: stamped for commit {old[:12]}, not {head[:12]} (stale)"
    ]
    stamp(install, baseVersion="0.21.5", commit="0" * 40)
    _code, doc = run_json(
        "status", "--install", install, "--patches", patch_set(tmp_path / "p2", upstream)
    )
    assert doc["install"]["version_not_from"] == [
        "install-stamp.json: a placeholder stamp (commit 000000000000)"
    ]


def test_check_reads_a_calver_tag_as_its_release(tmp_path: Path) -> None:
    upstream = calver_upstream(tmp_path / "up")
    patches = patch_set(tmp_path / "ps", upstream)
    code, doc = run_json(
        "check", "--install", upstream, "--patches", patches, "--ref", "v2026.9.24"
    )
    (target,) = doc["targets"]
    assert (target["version"], target["version_source"]) == ("0.21.5", "describe")
    assert target["version_from"] == "git describe: v2026.9.24"
    short = git(upstream, "rev-parse", "v2026.9.24^{commit}").strip()[:12]
    assert target["version_not_from"] == [
        f"install-stamp.json at {short}: not in its tree (a file written at install is read in "
        "the work tree only)",
        "hermes_cli/__init__.py: no __version__ literal",
    ]
    assert (code, target["patches"][0]["outcome"]) == (0, "applied")  # >=0.21.5: chosen


def test_since_selects_by_release_and_names_the_unknown_ones(tmp_path: Path) -> None:
    upstream = calver_upstream(tmp_path / "up")
    patches = patch_set(tmp_path / "ps", upstream)
    args = ("check", "--install", upstream, "--patches", patches, "--tags", "v2026.*")
    _, doc = run_json(*args, "--since", "0.21.3")
    assert [(t["ref"], t["version"]) for t in doc["targets"]] == [
        ("v2026.9.14", "0.21.3"),
        ("v2026.9.21", "0.21.4"),
        ("v2026.9.24", "0.21.5"),
    ]  # not v2026.8.31 (0.21.0), v2026.9.11 (unlisted), nor v2026.9.30 sorted as a number
    assert doc["selection"]["unknown_release"] == ["v2026.9.11", "v2026.9.30"]
    text = run_cli(*args, "--since", "0.21.3").stdout
    assert "not judged: v2026.9.30: a tag [tags] does not list (its release is unknown)" in text
    sources = "hermes_cli/__init__.py for v2026.9.14, v2026.9.21; git describe for v2026.9.24"
    assert f"versions from: {sources}\n" in text

    _code, doc = run_json(*args)  # no --since: every tag judged, the unknown ones as unknown
    versions = {t["ref"]: t["version"] for t in doc["targets"]}
    assert (
        versions["v2026.9.30"]
        == "0.21.5+1.g" + git(upstream, "rev-parse", "--short=7", "v2026.9.30").strip()
    )
    assert versions["v2026.9.11"] == "0.21.2"  # its own literal answers first
    assert list(versions)[-1] == "v2026.9.30"


@pytest.mark.parametrize("kind", ["fifo", "zero", "huge"])
def test_a_version_file_that_is_no_small_regular_file_is_a_reason_never_a_hang(
    tmp_path: Path, kind: str
) -> None:
    upstream = calver_upstream(tmp_path / "up")
    install = release_install(tmp_path, upstream, "v2026.9.21")
    target = install / STAMP
    if kind == "fifo":
        os.mkfifo(target)
        reason = "cannot read: not a regular file (a FIFO)"
    elif kind == "zero":
        target.symlink_to("/dev/zero")
        reason = "cannot read: not a regular file (a character device)"
    else:
        with target.open("wb") as handle:
            handle.truncate(64 << 20)  # sparse: costs no disk
        reason = f"too large ({64 << 20} bytes; at most {256 * 1024})"
    started = time.monotonic()
    _code, doc = run_json(
        "status", "--install", install, "--patches", patch_set(tmp_path / "ps", upstream)
    )
    assert time.monotonic() - started < 20
    assert doc["install"]["version"] == "0.21.4"  # the next source answers
    assert doc["install"]["version_not_from"] == [f"install-stamp.json: {reason}"]


@pytest.mark.parametrize("pattern", ["(a+)+$", "(a|aa)*$"])
def test_a_pattern_that_backtracks_without_end_is_cut_off(tmp_path: Path, pattern: str) -> None:
    repo = make_repo(tmp_path / "up", {"app.py": LINES, "VERSION": "a" * 60 + "b\n"}, tag="v0.21.5")
    config = f"[install]\nversion_file = \"VERSION\"\nversion_pattern = '{pattern}'\n"
    started = time.monotonic()
    _code, doc = run_json(
        "status", "--install", repo, "--patches", patch_set(tmp_path / "ps", repo, config)
    )
    assert time.monotonic() - started < 20
    assert doc["install"]["version"] == "0.21.5"  # describe, after it
    assert doc["install"]["version_not_from"] == [
        f"VERSION: version_pattern {pattern!r} ran past 2 s"
    ]


@pytest.mark.parametrize(
    ("config", "error"),
    [
        (
            '[install]\nversion_file = "a"\n[[install.version_source]]\ndescribe = true\n',
            "install.version_file and [[install.version_source]] both given",
        ),
        (
            '[install]\n[[install.version_source]]\njson = "s.json"\nfile = "b"\n',
            "install.version_source[0] needs exactly one of json, file, command, describe",
        ),
        (
            '[install]\n[[install.version_source]]\njson = "s.json"\n',
            "install.version_source[0] needs key",
        ),
        ('[install]\n[[install.version_source]]\nfile = "../x"\n', "path leaves the tree"),
        (
            "[install]\n[[install.version_source]]\ndescribe = true\nextra = 1\n",
            "unknown key 'extra'",
        ),
        ('[tags]\nv2026.9.24 = "0.21.5"\n', "tags.v2026: quote the tag name"),
        ('tags = "v2026.9.24"\n', "tags must be a table ([tags]), not 'v2026.9.24'"),
        ('[[tags]]\n"v2026.9.24" = "0.21.5"\n', "tags must be a table ([tags]), not [{"),
        ('[tags]\n"v2026.9.24" = "soon"\n', "tags.'v2026.9.24' must be a PEP 440 version string"),
    ],
)
def test_a_bad_version_setting_is_one_line_naming_the_file(
    tmp_path: Path, config: str, error: str
) -> None:
    repo = make_repo(tmp_path / "up", {"app.py": LINES})
    patches = patch_set(tmp_path / "ps", repo, config)
    proc = run_cli("status", "--install", repo, "--patches", patches)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert f"{patches / 'patchkeeper.toml'}: " in proc.stderr and error in proc.stderr


def test_a_version_file_that_is_a_fifo_never_blocks_status(tmp_path: Path) -> None:
    """The shorthand `version_file` is read as boundedly as a stamp: a FIFO with no writer
    hung `status` for good before."""
    repo = make_repo(tmp_path / "up", {"app.py": LINES}, tag="v0.21.5")
    os.mkfifo(repo / "VERSION")
    config = '[install]\nversion_file = "VERSION"\n'
    started = time.monotonic()
    _code, doc = run_json(
        "status", "--install", repo, "--patches", patch_set(tmp_path / "ps", repo, config)
    )
    assert time.monotonic() - started < 20
    assert doc["install"]["version"] == "0.21.5"
    assert doc["install"]["version_not_from"] == [
        "VERSION: cannot read: not a regular file (a FIFO)"
    ]


HERMES_FILE_ONLY = '[install]\nversion_file = "hermes_cli/__init__.py"\n'


def test_the_advice_names_the_real_cause_of_an_unknown_version(tmp_path: Path) -> None:
    """0.21.5 with only the old version_file set: no "set version_file" (it is set), no
    "fetch --tags" (a shallow install; its tags would be CalVer dates)."""
    upstream = calver_upstream(tmp_path / "up")
    install = release_install(tmp_path, upstream, "v2026.9.24")
    patches = patch_set(tmp_path / "ps", upstream, HERMES_FILE_ONLY)
    proc = run_cli("status", "--install", install, "--patches", patches)
    assert proc.returncode != 0
    config = patches / "patchkeeper.toml"
    assert (
        "note: fix is undecided: the install's version is unknown; hermes_cli/__init__.py holds "
        "no version literal (Hermes 0.21.5+ keeps it in install-stamp.json): add an "
        f"install-stamp source to {config}"
    ) in proc.stdout
    assert "fetch --tags" not in proc.stdout and "set [install] version_file" not in proc.stdout

    stamped = patch_set(tmp_path / "ps2", upstream)  # the chain, but the stamp is missing
    proc = run_cli("status", "--install", install, "--patches", stamped)
    assert f"{install / STAMP} is missing: the upstream's installer or updater writes it" in (
        proc.stdout
    )


def test_doctor_never_counts_an_undecided_fix_in_place(tmp_path: Path) -> None:
    upstream = calver_upstream(tmp_path / "up")
    install = release_install(tmp_path, upstream, "v2026.9.24")
    patches_dir = patch_set(tmp_path / "ps", upstream, HERMES_FILE_ONLY)
    code, doc = run_json("doctor", "--install", install, "--patches", patches_dir)
    patches = next(f for f in doc["findings"] if f["name"] == "patches")
    assert patches["summary"] == "0 of 1 in place, 1 undecided (the install's version is unknown)"
    assert (patches["ok"], code != 0) == (False, True)
    install_finding = next(f for f in doc["findings"] if f["name"] == "install")
    assert "hermes_cli/__init__.py: no __version__ literal" in install_finding["summary"]


def test_update_names_only_the_tags_it_brought_in_and_where_each_version_came_from(
    tmp_path: Path,
) -> None:
    """From 0.21.4 (its literal) to 0.21.5 (no literal: describe, after the release tags are
    adopted from origin). The note named every adopted tag, the one it started from too."""
    upstream = calver_upstream(tmp_path / "up")
    install = tmp_path / "install"
    git(tmp_path, "clone", "-q", "--no-tags", f"file://{upstream}", str(install))
    start = git(upstream, "rev-parse", "v2026.9.21^{commit}").strip()
    git(install, "checkout", "-q", "--detach", start)
    target = git(upstream, "rev-parse", "v2026.9.24^{commit}").strip()
    tags = CHAIN[CHAIN.index("[tags]") :]
    config = (
        '[install]\n[[install.version_source]]\nfile = "hermes_cli/__init__.py"\n'
        "[[install.version_source]]\ndescribe = true\n"
        f'[update]\ncommand = ["git", "checkout", "-q", "--detach", "{target}"]\n{tags}'
    )
    patches = patch_set(tmp_path / "ps", upstream, config)
    _, doc = run_json("update", "--install", install, "--patches", patches)
    assert "tagged commits the update brought in: v2026.9.24" in doc["notes"], doc["notes"]
    facts = doc["install"]
    assert (facts["version_before"], facts["version_before_from"]) == (
        "0.21.4",
        "hermes_cli/__init__.py: 0.21.4",
    )
    assert (facts["version_after"], facts["version_after_from"]) == (
        "0.21.5",
        "git describe: v2026.9.24",
    )
    assert facts["version_after_not_from"] == ["hermes_cli/__init__.py: no __version__ literal"]
    assert outcomes(doc) == {"fix": "applied"}


def test_after_a_conflict_the_smoke_line_names_what_it_did_not_prove(tmp_path: Path) -> None:
    """Another fix's check passing proves nothing of the one that conflicts."""
    import sys

    other = "".join(f"other {n}\n" for n in range(1, 21))
    repo = make_repo(tmp_path / "up", {"app.py": LINES, "other.py": other})
    good = diff_of(repo, {"app.py": LINES.replace("line 5\n", "line 5 fixed\n")})
    bad = diff_of(repo, {"other.py": other.replace("other 5\n", "other 5 fixed\n")})
    commit_files(repo, {"other.py": other.replace("other 5\n", "moved on\n")}, "upstream moved")
    config = f"[install]\npython = {json.dumps(sys.executable)}\n"
    patches = write_patch_set(
        tmp_path / "ps",
        {
            "good.patch": patch_text(good, smoke="good_check"),
            "bad.patch": patch_text(bad, smoke="bad_check"),
        },
        config,
    )
    (patches / "smoke").mkdir()
    for name in ("good_check", "bad_check"):
        (patches / "smoke" / f"{name}.py").write_text(
            "import json\n"
            f"print(json.dumps({{'check': '{name}', 'verdict': 'pass', 'steps': []}}))\n"
        )
    proc = run_cli("apply", "--install", repo, "--patches", patches)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith("smoke:")]
    assert line == "smoke: pass (good_check pass); not proven: bad (conflict)", proc.stdout


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({}, "no 'commit' key (cannot tell which commit it was written for)"),
        (
            {"commit": "unknown"},
            "commit 'unknown' is not a commit id (cannot tell which commit it was written for)",
        ),
        ({"commit": "OLD"}, "stamped for commit {old}, not {head} (stale)"),
    ],
)
def test_a_stamp_that_names_no_commit_of_this_checkout_gives_no_version(
    tmp_path: Path, fields: dict[str, str], reason: str
) -> None:
    """Hermes' own reader passes over a stamp without `commit`; one naming no commit id, or
    another commit in capitals, was taken as 0.21.5 and apply wrote the fix (exit 0)."""
    upstream = calver_upstream(tmp_path / "up")
    install = release_install(tmp_path, upstream, "v2026.9.24")
    head = git(install, "rev-parse", "HEAD").strip()
    old = git(upstream, "rev-parse", "v2026.9.21").strip()
    fields = {k: old.upper() if v == "OLD" else v for k, v in fields.items()}
    stamp(install, baseVersion="0.21.5", **fields)
    patches = patch_set(tmp_path / "ps", upstream)
    _code, doc = run_json("status", "--install", install, "--patches", patches)
    assert doc["install"]["version"] is None
    assert doc["install"]["version_not_from"][0] == "install-stamp.json: " + reason.format(
        old=old[:12], head=head[:12]
    )
    proc = run_cli("apply", "--install", install, "--patches", patches)
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert git(install, "status", "--porcelain").strip() == f"?? {STAMP}"  # nothing written


def test_a_stamp_in_capitals_or_with_an_odd_distance_is_read_without_a_traceback(
    tmp_path: Path,
) -> None:
    upstream = calver_upstream(tmp_path / "up")
    install = release_install(tmp_path, upstream, "v2026.9.24")
    head = git(install, "rev-parse", "HEAD").strip()
    stamp(install, baseVersion="0.21.5", commit=head.upper(), distance="\u00b2")  # "²".isdigit()
    proc = run_cli(
        "status", "--json", "--install", install, "--patches", patch_set(tmp_path / "ps", upstream)
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert json.loads(proc.stdout)["install"]["version"] == "0.21.5"


def test_describe_asks_git_once_when_a_tag_names_no_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One `git describe` answers every ref; a tag that is no version (`v1.x`) is said so
    from that answer, never asked again ref by ref (it was 1 + one per ref)."""
    from patchkeeper.install.checkout.version_probes import describe_all
    from patchkeeper.patchset.version_sources import TagNames

    repo = make_repo(tmp_path / "up", {"app.py": LINES}, tag="v1.0")
    commit_files(repo, {"app.py": LINES + "more\n"}, "second", tag="v1.x")
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    infos = describe_all(repo, ["v1.0", "v1.x"], TagNames())
    assert [str(info.version) for info in infos] == ["1.0", "None"]
    assert infos[1].text == "git describe: v1.x: v1.x: not a PEP 440 version"
    described = [line for line in trace.read_text().splitlines() if "git describe" in line]
    assert len(described) == 1, described


def test_a_stamp_distance_past_the_int_limit_is_no_distance_not_a_traceback(
    tmp_path: Path,
) -> None:
    """A `distance` of 5000 digits (past Python's int-conversion limit): int() raised
    ValueError, 'internal error' on every command while the stamp stood."""
    upstream = calver_upstream(tmp_path / "up")
    install = release_install(tmp_path, upstream, "v2026.9.24")
    head = git(install, "rev-parse", "HEAD").strip()
    stamp(install, baseVersion="0.21.5", commit=head, distance="9" * 5000)
    proc = run_cli(
        "status", "--json", "--install", install, "--patches", patch_set(tmp_path / "ps", upstream)
    )
    assert "internal error" not in proc.stderr, proc.stderr
    assert json.loads(proc.stdout)["install"]["version"] == "0.21.5"
