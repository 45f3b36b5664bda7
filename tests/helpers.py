"""Small builders for tests: real git repositories, patch sets on disk, the CLI as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

GIT_ID = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
}


def git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    proc = subprocess.run(
        ["git", *args],
        cwd=repo,
        input=stdin,
        capture_output=True,
        env={**os.environ, **GIT_ID},
        check=True,
    )
    return proc.stdout.decode().strip()


def make_repo(path: Path, files: dict[str, str], tag: str | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    commit_files(path, files, "initial", tag)
    return path


def commit_files(repo: Path, files: dict[str, str], message: str, tag: str | None = None) -> str:
    for name, text in files.items():
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    if tag:
        git(repo, "tag", tag)
    return git(repo, "rev-parse", "HEAD")


def diff_of(repo: Path, edits: dict[str, str]) -> str:
    """The git diff that EDITS would make to REPO's HEAD, leaving the repo as it was."""
    originals = {}
    for name, text in edits.items():
        target = repo / name
        originals[name] = target.read_text() if target.exists() else None
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    git(repo, "add", "-N", *edits)
    diff = git(repo, "diff") + "\n"
    git(repo, "reset", "-q")
    for name, text in originals.items():
        if text is None:
            (repo / name).unlink()
        else:
            (repo / name).write_text(text)
    return diff


# A fix with no smoke check is not proven (exit 5) unless its patch says why none can prove
# it: the tests' fixtures say so, since each test checks the tree itself.
NO_CHECK = "none (a test fixture: the test checks the tree itself)"


def patch_text(diff: str, description: str = "A fix", **fields: str) -> str:
    """A patch file: DIFF under a header with FIELDS (`Smoke: none (...)` unless given)."""
    header = [f"Description: {description}"]
    header += [f"{key.replace('_', '-').title()}: {value}" for key, value in fields.items()]
    if "smoke" not in fields:
        header.append(f"Smoke: {NO_CHECK}")
    return "\n".join(header) + "\n---\n" + diff


def write_patch_set(root: Path, patches: dict[str, str], config: str = "") -> Path:
    """PATCHES maps a series entry (file or folder/file) to its text; series keeps dict order."""
    root.mkdir(parents=True, exist_ok=True)
    entries: list[str] = []
    for name, text in patches.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        entry = name.split("/")[0]
        if entry not in entries:
            entries.append(entry)
    (root / "series").write_text("\n".join(entries) + "\n")
    if config:
        (root / "patchkeeper.toml").write_text(config)
    return root


def run_cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "patchkeeper", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ID, "NO_COLOR": "1"},
        check=False,
    )


def run_json(*args: str | Path) -> tuple[int, dict[str, Any]]:
    proc = run_cli(*args, "--json")
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def numbered_lines(changes: dict[int, str], count: int = 30) -> str:
    """The text "line 0" to "line COUNT-1", one a line, with the lines CHANGES names replaced."""
    return "".join(f"{changes.get(n, f'line {n}')}\n" for n in range(count))


def traced_check(
    repo: Path, patches: Path, trace: Path
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """`check --ref HEAD --json` of PATCHES on REPO in a process of its own, with git's trace
    written to TRACE: the finished process, and the git commands it started in order (the
    words after `git`, such as "apply --cached --check")."""
    proc = subprocess.run(
        [sys.executable, "-m", "patchkeeper", "check", "--ref", "HEAD", "--json",
         "--install", str(repo), "--patches", str(patches)],
        capture_output=True, text=True, check=False,
        env={**os.environ, **GIT_ID, "GIT_TRACE": str(trace)},
    )  # fmt: skip
    return proc, traced_git_commands(trace)


def traced_git_commands(trace: Path) -> list[str]:
    """The git commands a GIT_TRACE file says were started, in order (the words after `git`)."""
    said = trace.read_text().splitlines() if trace.exists() else []
    marker = "trace: built-in: git "
    return [line.split(marker, 1)[1] for line in said if marker in line]


def outcomes(document: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["outcome"] for p in document["patches"]}


def tree_snapshot(repo: Path) -> dict[str, bytes]:
    """Every file of the work tree and of patchkeeper's state under .git/patchkeeper (the
    lock file aside: taking and releasing it is not a change), for "nothing changed" checks."""
    snapshot = {}
    for path in sorted(repo.rglob("*")):
        relative = path.relative_to(repo).as_posix()
        if relative == ".git/patchkeeper/lock" or not path.is_file():
            continue
        if not relative.startswith(".git/") or relative.startswith(".git/patchkeeper/"):
            snapshot[relative] = path.read_bytes()
    return snapshot


def bare_hermes_update(sandbox: Any) -> str:
    """The sandbox's own `hermes update`, as an operator without patchkeeper runs it."""
    proc = subprocess.run(
        ["./hermes", "update", "--yes"],
        cwd=sandbox.install,
        env=sandbox.hermes_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout


def modules_loaded(*argv: str, new_only: bool = True) -> set[str]:
    """The modules loaded when `patchkeeper ARGV` ends, run in a fresh interpreter (what it
    prints is thrown away); NEW_ONLY: only those the interpreter had not loaded at start."""
    code = (
        "import sys, io, contextlib\n"
        f"before = set(sys.modules) if {new_only!r} else set()\n"
        f"sys.argv = ['patchkeeper', *{list(argv)!r}]\n"
        "from patchkeeper.cli import main\n"
        "try:\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('\\n'.join(sorted(set(sys.modules) - before)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(proc.stdout.split())
