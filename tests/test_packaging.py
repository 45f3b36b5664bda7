"""Packaging as current tools expect (issue 19, item 5): `python -m build` with no warning,
`twine check --strict` clean, PEP 639 licence metadata, and a wheel that holds what the
commands read at run time: the bundled patch set, the sandbox's data and the playbook.

The build runs offline and without isolation (the test extras bring setuptools >= 77)."""

from __future__ import annotations

import email
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytest.importorskip("build")
pytest.importorskip("twine")


def tracked(folder: str) -> list[str]:
    """The files git tracks under FOLDER (relative to it): what a clone has."""
    out = subprocess.run(["git", "ls-files", "-z", folder], cwd=ROOT, capture_output=True,
                         check=True).stdout.decode()  # fmt: skip
    return sorted(Path(p).relative_to(folder).as_posix() for p in out.split("\0") if p)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The sdist and wheel, built from a copy of the tracked files (no build/ left in the
    checkout), and everything the build printed."""
    tmp = tmp_path_factory.mktemp("build")
    source = tmp / "src"
    for name in tracked("."):
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp / "dist"), "."],
        cwd=source, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return tmp / "dist", proc.stdout + proc.stderr


def test_the_build_prints_no_warning(built: tuple[Path, str]) -> None:
    _, output = built
    warnings = [line for line in output.splitlines() if "warning" in line.lower()]
    assert not warnings, "\n".join(warnings)


def test_twine_check_strict_passes(built: tuple[Path, str]) -> None:
    dist, _ = built
    files = sorted(str(p) for p in dist.iterdir())
    assert len(files) == 2, files
    proc = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *files],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_metadata_has_an_spdx_licence_classifiers_and_the_licence_file(
    built: tuple[Path, str],
) -> None:
    dist, _ = built
    wheel = next(dist.glob("*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = email.message_from_bytes(archive.read(metadata_name))
    assert metadata["Metadata-Version"] >= "2.4"
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    classifiers = metadata.get_all("Classifier")
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert not any(c.startswith("License ::") for c in classifiers)  # PEP 639: the expression
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert declared["project"]["license"] == "MIT"
    assert any(r.startswith("setuptools>=77") for r in declared["build-system"]["requires"])


def test_the_wheel_holds_the_patch_set_the_sandbox_data_and_the_playbook(
    built: tuple[Path, str],
) -> None:
    dist, _ = built
    with zipfile.ZipFile(next(dist.glob("*.whl"))) as archive:
        names = set(archive.namelist())
    expected = {f"patchkeeper/_patches/{p}" for p in tracked("patches")}
    expected |= {f"patchkeeper/demo/upstream/{p}" for p in tracked("patchkeeper/demo/upstream")}
    expected |= {f"patchkeeper/demo/releases/{p}" for p in tracked("patchkeeper/demo/releases")}
    expected |= {"patchkeeper/fleet/rollout.yml"}
    assert "patchkeeper/_patches/series" in expected
    assert "patchkeeper/demo/upstream/hermes" in expected
    missing = sorted(expected - names)
    assert not missing, missing
