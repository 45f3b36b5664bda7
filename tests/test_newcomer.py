"""A newcomer's first hour (issue 9, items 12, 13, 16): the README's set-up commands work on a
stock system Python, the tests need no git identity of the machine's, shell completion is
documented and works, and the licence the package declares is there."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from patchkeeper.model import exitcodes

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


# ---------------------------------------------------------------- 12. a venv first


def set_up_commands() -> list[str]:
    """The two commands under `## Set up`, in order: the demo's, then the tests'."""
    section = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", section, re.S)][:2]


def test_the_set_up_commands_make_a_venv_first() -> None:
    """A PEP 668 system Python refuses `pip install` outside a venv."""
    demo, tests = set_up_commands()
    venv = "python3 -m venv .venv && . .venv/bin/activate && "
    assert demo == f"{venv}python3 -m pip install -e . && patchkeeper demo"
    assert tests == f"{venv}python3 -m pip install -e '.[test]' && python3 -m pytest -n 2"


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    _, tests = set_up_commands()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert any(line.strip() == tests for line in ci.splitlines()), ci


# ---------------------------------------------------------------- 13. no git identity needed


def test_the_suite_needs_no_git_identity_of_the_machine(tmp_path: Path) -> None:
    """No global or system git config, no identity in the environment: the tests set their
    own (conftest.py), so the README's test command works on any machine."""
    home = tmp_path / "home"
    home.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GIT_", "PYTEST_", "EMAIL")) and key != "PYTEST_XDIST_WORKER"
    }
    env |= {"HOME": str(home), "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    probe = subprocess.run(["git", "var", "GIT_COMMITTER_IDENT"], env=env, cwd=tmp_path,
                           capture_output=True, check=False)  # fmt: skip
    if probe.returncode == 0:
        pytest.skip("git guesses an identity from the system here (hostname, passwd)")
    test = "tests/test_leftovers.py::test_unmerged_paths_are_listed_and_left_to_git"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", test],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


# ---------------------------------------------------------------- 16. licence, completion


def test_the_licence_the_package_declares_is_shipped() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    assert "MIT" in str(declared)
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "Permission is hereby granted" in text


def test_shell_completion_is_documented_and_works() -> None:
    install = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    for shell in ("bash", "zsh", "fish"):
        assert f"_PATCHKEEPER_COMPLETE={shell}_source patchkeeper" in install, shell
    script = Path(sys.executable).parent / "patchkeeper"
    if not script.exists():
        pytest.skip("the patchkeeper script is not installed beside this interpreter")
    env = {**os.environ, "_PATCHKEEPER_COMPLETE": "bash_source"}
    source = subprocess.run([script], env=env, capture_output=True, text=True, check=False)
    assert "_patchkeeper_completion" in source.stdout
    env = {**os.environ, "_PATCHKEEPER_COMPLETE": "bash_complete",
           "COMP_WORDS": "patchkeeper lef", "COMP_CWORD": "1"}  # fmt: skip
    words = subprocess.run([script], env=env, capture_output=True, text=True, check=False)
    assert words.stdout.split() == ["plain,leftovers"], words


# ---------------------------------------------------------------- issue 19: read in five minutes

DOCS = ROOT / "docs"
INSTALL = (DOCS / "install.md").read_text(encoding="utf-8")
CI = (DOCS / "ci.md").read_text(encoding="utf-8")


def sections(text: str) -> list[str]:
    return re.findall(r"^## (.+)$", text, re.M)


def test_the_readme_is_a_start_and_the_docs_the_reference() -> None:
    assert len(README.splitlines()) <= 260
    assert sections(README) == [
        "Set up", "Install", "The demo", "Your own install in five steps", "Exit codes",
        "Commands", "Documentation",
    ]  # fmt: skip
    steps = re.findall(r"^\*\*(\d)\. ", README.split("## Your own install", 1)[1], re.M)
    assert steps == ["1", "2", "3", "4", "5"]
    five = README.split("**5. Act on what is not 0.**", 1)[1].split("\n## ", 1)[0]
    for code in "3456":
        assert f"- **{code}, " in five, code
    table = README.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    every_code = sorted(v for k, v in vars(exitcodes).items() if k.isupper() and isinstance(v, int))
    assert [int(c) for c in re.findall(r"^\| (\d) \|", table, re.M)] == every_code
    docs = "".join(p.read_text(encoding="utf-8") for p in DOCS.glob("*.md"))
    assert "| 6 | busy" not in docs  # the table is in one place


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to `-`."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_every_link_between_the_pages_resolves() -> None:
    pages = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    checked = 0
    for page in pages:
        text = re.sub(r"```.*?```|`[^`\n]*`", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            assert resolved.exists(), f"{page.name}: {target}"
            if anchor:
                headings = re.findall(r"^#+ (.+)$", resolved.read_text(encoding="utf-8"), re.M)
                assert anchor in {github_anchor(h) for h in headings}, f"{page.name}: {target}"
            checked += 1
    assert checked > 40


def test_no_install_snippet_names_a_package_or_tag_we_do_not_publish() -> None:
    texts = [README, *(p.read_text() for p in DOCS.glob("*.md")),
             (ROOT / ".pre-commit-hooks.yaml").read_text()]  # fmt: skip
    for text in texts:
        assert not re.search(r"(pipx|pip) install patchkeeper\b", text)
        assert "rev: v" not in text
    assert 'pipx install "git+URL"' in README and 'pipx install "git+URL"' in INSTALL


def pip_install(spec: str, target: Path) -> Path:
    """What `pipx install SPEC` installs, offline: pip into TARGET, the build backend from
    the test extras instead of the network."""
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--no-cache-dir", "--target", str(target), spec],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return target / "bin" / "patchkeeper"


@pytest.mark.parametrize("form", ["git+URL", "."])
def test_the_documented_installs_work(form: str, tmp_path: Path) -> None:
    """`pipx install "git+URL"` (URL: this clone) and `pipx install .` in a clone."""
    pytest.importorskip("setuptools", minversion="77")
    if form == "git+URL":
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                              check=False)  # fmt: skip
        if head.returncode != 0:
            pytest.skip("not a git clone")
        spec = f"git+{ROOT.as_uri()}"
    else:
        spec = str(ROOT)
    script = pip_install(spec, tmp_path / "site")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    version = subprocess.run([sys.executable, script, "--version"], env=env, cwd=tmp_path,
                             capture_output=True, text=True, check=False)  # fmt: skip
    assert version.stdout.startswith("patchkeeper, version "), version
    package = tmp_path / "site" / "patchkeeper"
    assert (package / "demo" / "upstream" / "hermes").is_file()
    assert (package / "_patches" / "series").is_file()


def pre_commit_env(tmp_path: Path) -> dict[str, str]:
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "pre-commit").exists() or not (bin_dir / "patchkeeper").exists():
        pytest.skip("pre-commit or patchkeeper is not installed beside this interpreter")
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    home = str(tmp_path / "pre-commit-home")
    return {**os.environ, "PRE_COMMIT_HOME": home, "PATH": path, "NO_COLOR": "1"}


def pre_commit(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([Path(sys.executable).parent / "pre-commit", *args], cwd=repo, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip


def test_the_documented_pre_commit_hooks_run(sandbox, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """docs/ci.md's `repo: local` configuration, run by pre-commit itself, next to an upstream
    checkout at ../hermes-agent (the sandbox's install), with no network."""
    yaml = pytest.importorskip("yaml")
    env = pre_commit_env(tmp_path)
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", CI, re.S) if "repo: local" in b)
    config = yaml.safe_load(block)
    assert [hook["id"] for hook in config["repos"][0]["hooks"]] == [
        "patchkeeper-lint", "patchkeeper-check",
    ]  # fmt: skip
    repo = sandbox.root / "patch-set"
    shutil.copytree(sandbox.patches, repo)
    (repo / ".pre-commit-config.yaml").write_text(block)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    assert pre_commit(repo, env, "validate-config").returncode == 0
    lint = pre_commit(repo, env, "run", "patchkeeper-lint", "--all-files")
    assert lint.returncode == 0 and "patchkeeper lint" in lint.stdout, lint.stdout + lint.stderr
    check = pre_commit(repo, env, "run", "--hook-stage", "pre-push", "patchkeeper-check",
                       "--all-files")  # fmt: skip
    direct = subprocess.run(
        ["patchkeeper", "check", "--patches", ".", "--install", "../hermes-agent", "--ref",
         "origin/main"], cwd=repo, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert "patch set:" in direct.stdout, direct.stderr
    assert (check.returncode == 0) == (direct.returncode == 0), check.stdout + check.stderr
    (repo / "series").write_text("no-such.patch\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    broken = pre_commit(repo, env, "run", "patchkeeper-lint", "--all-files")
    assert broken.returncode != 0 and "no-such.patch" in broken.stdout, broken.stdout


def test_the_shipped_hook_manifest_is_valid(tmp_path: Path) -> None:
    env = pre_commit_env(tmp_path)  # pre-commit's home in the test's own temp dir
    proc = pre_commit(ROOT, env, "validate-manifest", ".pre-commit-hooks.yaml")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_documented_smoke_check_passes_on_the_sandbox(sandbox) -> None:  # type: ignore[no-untyped-def]
    page = (DOCS / "smoke-checks.md").read_text(encoding="utf-8")
    code = re.findall(r"```python\n(.*?)```", page, re.S)[0]
    (sandbox.patches / "smoke" / "ledger_roundtrip.py").write_text(code)
    proc = subprocess.run(
        [sys.executable, "-m", "patchkeeper", "smoke", "--install", str(sandbox.install),
         "--patches", str(sandbox.patches), "--check", "ledger_roundtrip", "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    document = json.loads(proc.stdout)
    assert proc.returncode == 0, document
    assert [step["name"] for step in document["checks"][0]["steps"]] == [
        "round trip", "under HERMES_HOME",
    ]  # fmt: skip


def test_the_documented_schema_validation_runs(tmp_path: Path) -> None:
    """docs/commands.md's snippet, run as written in a folder with docs/ beside it."""
    pytest.importorskip("jsonschema")
    page = (DOCS / "commands.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```sh\n(.*?)```", page, re.S) if "jsonschema" in b)
    script = block.replace("python3 -m pip install jsonschema\n", "")
    (tmp_path / "docs").symlink_to(DOCS)
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "HOME": str(tmp_path)}  # fmt: skip
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert proc.stdout.strip().endswith("valid"), proc.stdout + proc.stderr


def test_doctor_on_a_fresh_install_fails_the_lines_the_readme_prepares_for(
    sandbox, tmp_path: Path  # type: ignore[no-untyped-def]
) -> None:
    """README step 2 as written (`patchkeeper doctor`, the bundled set, the default install)
    on a fresh install of a release the bundled fixes are for, with its venv."""
    home = tmp_path / "home"
    install = home / ".hermes" / "hermes-agent"
    subprocess.run(["git", "clone", "-q", "--depth=1", "--branch=v2026.9.14",
                    sandbox.origin.as_uri(), str(install)], check=True,
                   capture_output=True)  # fmt: skip
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(install / "venv")],
                   check=True)  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "PATCHKEEPER_PATCHES"}
    proc = subprocess.run([sys.executable, "-m", "patchkeeper", "doctor", "--json"],
                          env={**env, "HOME": str(home), "NO_COLOR": "1"}, cwd=tmp_path,
                          capture_output=True, text=True, check=False)  # fmt: skip
    failing = {f["name"] for f in json.loads(proc.stdout)["findings"] if not f["ok"]}
    said = README.split("On a fresh install", 1)[1].split("Any\nother line", 1)[0]
    assert failing == set(re.findall(r"`([a-z ]+)`\s\(", said)), (failing, said)
