"""The practice upstream's version lives where real Hermes keeps it from 0.21.5 on: only in
`install-stamp.json` at the install's root, written by the installer (the sandbox builder) and
by `hermes update`, ignored by git; release tags are CalVer and name no version.

Each test runs the install's own `./hermes` in a real sandbox and reads what it prints and
the stamp it leaves.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from packaging.version import Version

from patchkeeper.demo.sandbox import RELEASE_TABLE, TAG_OF, VERSIONS, Sandbox, release_tag
from patchkeeper.model.errors import UserError

STAMP = "install-stamp.json"
STAMP_KEYS = {
    "schemaVersion", "commit", "commitDate", "branch", "builtAt", "dirty", "source",
    "distribution", "baseVersion", "displayVersion", "distance", "payload", "tag",
    "updateMechanism",
}  # fmt: skip


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def hermes(sandbox: Sandbox, *args: str) -> str:
    proc = subprocess.run(
        ["./hermes", *args],
        cwd=sandbox.install,
        env=sandbox.hermes_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.strip()


def stamp(sandbox: Sandbox) -> dict:
    return json.loads((sandbox.install / STAMP).read_text(encoding="utf-8"))


def test_the_tag_table_maps_each_calver_tag_to_its_version() -> None:
    assert [(r.tag, r.version) for r in RELEASE_TABLE[:3]] == [
        ("v2026.9.11", "0.21.2"),  # upstream's own tags for these versions
        ("v2026.9.14", "0.21.3"),
        ("v2026.9.24", "0.21.5"),
    ]
    for r in RELEASE_TABLE:  # a CalVer tag is its release's date
        year, month, day = (int(part) for part in r.tag[1:].split("."))
        assert r.date.startswith(f"{year:04d}-{month:02d}-{day:02d}T"), r
    assert release_tag("0.21.5") == release_tag("v2026.9.24") == "v2026.9.24"
    assert VERSIONS[TAG_OF["0.24.0"]] == "0.24.0"
    try:
        release_tag("v0.21.5")
    except UserError as exc:
        assert "v2026.9.24 (0.21.5)" in str(exc)
    else:
        raise AssertionError("an old-style tag is no sandbox release")


def test_the_installer_writes_an_ignored_stamp_and_version_reads_it(sandbox: Sandbox) -> None:
    data = stamp(sandbox)
    assert set(data) == STAMP_KEYS
    assert [data[key] for key in ("baseVersion", "distance", "displayVersion")] == [
        "0.21.3", 0, "0.21.3"
    ]  # fmt: skip
    assert data["commit"] == git(sandbox.install, "rev-parse", "HEAD")
    assert (data["source"], data["updateMechanism"]) == ("git", "self")
    assert git(sandbox.install, "status", "--porcelain", "--ignored") == f"!! {STAMP}"
    assert hermes(sandbox, "--version") == "Hermes Agent v0.21.3 (2026.9.14)"


def test_from_0_21_5_the_version_is_only_in_the_stamp(sandbox: Sandbox) -> None:
    for release in RELEASE_TABLE:
        init = git(sandbox.origin, "show", f"{release.tag}:hermes_cli/__init__.py")
        stated = f'__version__ = "{release.version}"' in init
        assert stated == (Version(release.version) < Version("0.21.5")), release
        assert git(sandbox.origin, "tag", "-l", "--format=%(contents)", release.tag) == (
            f"Hermes Agent {release.version}"
        )
    sandbox.publish("0.21.5")
    assert "Latest release: v2026.9.24" in hermes(sandbox, "update", "--yes")
    data = stamp(sandbox)
    assert (data["baseVersion"], data["distance"]) == ("0.21.5", 0)
    assert data["commit"] == git(sandbox.install, "rev-parse", "HEAD")
    assert hermes(sandbox, "--version") == "Hermes Agent v0.21.5 (2026.9.24)"
    assert "v2026.9.24" not in git(sandbox.install, "tag", "-l").split()  # shallow, no tags


def test_a_main_channel_install_reads_base_plus_distance(sandbox: Sandbox) -> None:
    sandbox.publish("0.21.5")
    tip = git(sandbox.origin, "rev-parse", "main")
    for n in (1, 2):
        tip = git(sandbox.origin, "commit-tree", f"{tip}^{{tree}}", "-p", tip, "-m", f"main {n}")
    git(sandbox.origin, "update-ref", "refs/heads/main", tip)
    constants = sandbox.install / "hermes_constants.py"
    constants.write_text(constants.read_text("utf-8") + "# an operator's edit\n", "utf-8")
    hermes(sandbox, "update", "--yes")
    data = stamp(sandbox)
    assert [data[key] for key in ("baseVersion", "distance", "displayVersion")] == [
        "0.21.5", 2, "0.21.5+2"
    ]  # fmt: skip
    assert hermes(sandbox, "version") == f"0.21.5+2.g{tip[:7]}.dirty"  # the edit is back
    git(sandbox.install, "checkout", "--", "hermes_constants.py")
    assert hermes(sandbox, "version") == f"0.21.5+2.g{tip[:7]}"


def test_a_stamp_that_is_gone_or_stale_is_not_believed(sandbox: Sandbox) -> None:
    sandbox.publish("0.21.5")
    hermes(sandbox, "update", "--yes")
    (sandbox.install / STAMP).unlink()
    assert hermes(sandbox, "version") == "0.0.0"  # no literal to fall back on any more
    hermes(sandbox, "update", "--yes")
    assert hermes(sandbox, "version") == "0.21.5"
    git(sandbox.install, "fetch", "-q", "origin", "v2026.9.14")
    git(sandbox.install, "checkout", "-q", "--detach", "v2026.9.14")  # moved by hand
    assert hermes(sandbox, "version") == "0.21.3"  # the literal there, not the 0.21.5 stamp
