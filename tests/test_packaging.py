"""Packaging as current tools expect (issue 19, item 5): `python -m build` with no warning,
`twine check --strict` clean, PEP 639 licence metadata, and a wheel that holds what the
commands read at run time: the bundled patch set, the sandbox's data and the playbook.

The build runs offline and without isolation (the test extras bring setuptools >= 77 and
setuptools-scm). It builds from a clone (the version is git's) with the working tree's files
laid over it, and `python -m build` makes the wheel from the sdist, where there is no git: the
sdist's PKG-INFO carries the version (issue 28, item 2)."""

from __future__ import annotations

import email
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import venv
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


def head() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The sdist and wheel, built from a copy of the tracked files (no build/ left in the
    checkout), and everything the build printed."""
    tmp = tmp_path_factory.mktemp("build")
    source = tmp / "src"
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(ROOT), str(source)], check=True)
    subprocess.run(["git", "checkout", "-q", head()], cwd=source, check=True)
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
    expected |= {f"patchkeeper/systemd/{p}" for p in tracked("patchkeeper/systemd")}
    assert "patchkeeper/systemd/user/patchkeeper-update.timer" in expected
    assert "patchkeeper/_patches/series" in expected
    assert "patchkeeper/demo/upstream/hermes" in expected
    missing = sorted(expected - names)
    assert not missing, missing


def wheel_metadata(dist: Path) -> email.message.Message:
    with zipfile.ZipFile(next(dist.glob("*.whl"))) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return email.message_from_bytes(archive.read(name))


def test_the_version_is_the_commit_and_the_sdist_builds_without_git(
    built: tuple[Path, str],
) -> None:
    """0.1.devN+gHASH: a new commit is a newer version, so `pipx upgrade` installs it. The
    wheel was built from the sdist, which holds no .git."""
    dist, _ = built
    version = wheel_metadata(dist)["Version"]
    assert version.startswith("0.1.dev") and f"+g{head()[:7]}" in version, version
    with tarfile.open(next(dist.glob("*.tar.gz"))) as sdist:
        names = sdist.getnames()
    assert not any("/.git/" in n for n in names)
    assert any(n.endswith("/PKG-INFO") for n in names)
    assert any(n.endswith("/docs/schemas/common.schema.json") for n in names)


def test_the_wheel_ships_the_schemas_and_the_project_urls(built: tuple[Path, str]) -> None:
    dist, _ = built
    with zipfile.ZipFile(next(dist.glob("*.whl"))) as archive:
        names = set(archive.namelist())
    schemas = {f"patchkeeper/_schemas/{p}" for p in tracked("docs/schemas")}
    assert "patchkeeper/_schemas/common.schema.json" in schemas
    assert not sorted(schemas - names)
    assert wheel_metadata(dist).get_all("Project-URL")
    assert any(n.endswith(".data/data/share/man/man1/patchkeeper.1") for n in names)


@pytest.fixture(scope="module")
def installed(built: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with the wheel installed as pipx does (not editable); the dependencies come from
    this interpreter's site-packages through a .pth file (offline)."""
    dist, _ = built
    env_dir = tmp_path_factory.mktemp("venv") / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    # Away from the checkout and PYTHONPATH: an egg-info there (`pip install -e .` makes one)
    # of the same version would make pip answer "already installed" and install nothing.
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
         "--no-index", "--no-cache-dir", str(next(dist.glob("*.whl")))],
        cwd=env_dir, env=clean, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert (env_dir / "bin" / "patchkeeper").is_file(), proc.stdout + proc.stderr
    assert proc.returncode == 0, proc.stdout + proc.stderr
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                              "['purelib'])"], capture_output=True, text=True,
                             check=True).stdout.strip()  # fmt: skip
    import click  # the dependencies' folder: this interpreter's site-packages

    deps = Path(click.__file__).resolve().parent.parent
    assert deps != Path(sysconfig.get_paths()["purelib"]) or deps.is_dir()
    (Path(purelib) / "patchkeeper-test-deps.pth").write_text(f"{deps}\n")
    return env_dir


def installed_run(env_dir: Path, home: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PATCHKEEPER_PATCHES")}
    env |= {"HOME": str(home), "NO_COLOR": "1", "GIT_AUTHOR_NAME": "T", "GIT_COMMITTER_NAME": "T",
            "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    return subprocess.run([env_dir / "bin" / "patchkeeper", *map(str, args)], cwd=home, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip


def test_record_never_writes_into_the_installed_package(installed: Path, tmp_path: Path) -> None:
    """Issue 28, item 1: with no set named, `record` refuses with one line naming `init`; after
    `patchkeeper init DIR`, it writes DIR and nothing in site-packages changes."""
    home = tmp_path / "home"
    install = home / ".hermes" / "hermes-agent"
    install.mkdir(parents=True)
    git_ = ["git", "-c", "user.name=T", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=install, check=True)
    (install / "hermes_cli").mkdir()
    (install / "hermes_cli" / "__init__.py").write_text('__version__ = "0.21.3"\n')
    (install / "tool.py").write_text("x = 1\n")
    subprocess.run(["git", "add", "-A"], cwd=install, check=True)
    subprocess.run([*git_, "commit", "-q", "-m", "initial"], cwd=install, check=True)
    version = installed_run(installed, home, "--version")
    assert version.returncode == 0 and "+g" in version.stdout, version
    packaged = next(installed.glob("lib/python*/site-packages/patchkeeper/_patches"))
    before = sorted((p.relative_to(packaged), p.read_bytes()) for p in packaged.rglob("*")
                    if p.is_file())  # fmt: skip
    (install / "tool.py").write_text("x = 2\n")

    refused = installed_run(installed, home, "record", "mine", "--path", "tool.py", "-m", "Mine")
    assert refused.returncode == 2, refused
    assert refused.stderr.count("\n") == 1 and "patchkeeper init" in refused.stderr
    refreshed = installed_run(installed, home, "refresh", "schema-once")
    assert refreshed.returncode == 2 and "patchkeeper init" in refreshed.stderr, refreshed
    named = installed_run(installed, home, "record", "mine", "--path", "tool.py", "-m", "Mine",
                          "--patches", packaged)  # fmt: skip
    assert named.returncode == 2, named  # the package's copy, however named
    inside = installed_run(installed, home, "init", packaged / "mine")
    assert inside.returncode == 2 and "inside the bundled patch set" in inside.stderr, inside

    own = tmp_path / "own"
    made = installed_run(installed, home, "init", own)
    assert made.returncode == 0, made
    assert (own / "series").read_text() == (packaged / "series").read_text()
    assert (own / "smoke" / "ledger_schema.py").is_file() and (own / "patchkeeper.toml").is_file()
    recorded = installed_run(installed, home, "record", "mine", "--path", "tool.py", "-m", "Mine",
                             "--patches", own)  # fmt: skip
    assert recorded.returncode == 0, recorded
    assert (own / "mine.patch").is_file() and "mine" in (own / "series").read_text()
    after = sorted((p.relative_to(packaged), p.read_bytes()) for p in packaged.rglob("*")
                   if p.is_file())  # fmt: skip
    assert after == before
    again = installed_run(installed, home, "init", own)
    assert again.returncode == 2 and "not empty" in again.stderr, again


def test_the_installed_command_loads_nothing_but_the_cli_for_its_version(installed: Path) -> None:
    """Issue 30: `patchkeeper --version` costs the interpreter's start and patchkeeper's CLI
    module, no more; the wrapper pip writes for an entry point imports `re` (and enum,
    functools, ...) before patchkeeper, which is why the command is a script of its own."""
    python = installed / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def modules(*args: str | Path) -> set[str]:
        proc = subprocess.run([python, "-X", "importtime", *map(str, args)], env=env,
                              capture_output=True, text=True, check=True)  # fmt: skip
        return {line.split("|")[-1].strip() for line in proc.stderr.splitlines()[1:]}

    extra = modules(installed / "bin" / "patchkeeper", "--version") - modules("-c", "pass")
    assert extra == {"patchkeeper", "patchkeeper._version", "patchkeeper.cli"}
