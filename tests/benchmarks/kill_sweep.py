"""SIGKILL at the Nth unlink, rename or truncate of `update` and `apply` (and of every process
they start), then `recover`: is anything lost, torn or misreported? Prints the counts.

The fixture is built from scratch: an upstream with two releases, a clone as the install,
two patches (one edits two files, one edits a file and creates a module), a trivial updater
(`git pull --ff-only`), and the operator's own work in place: an edit to a tracked file, an
untracked file, and an edit to a patched file. `update` starts with the patches applied and
the new release published; `apply` starts with the patches out and the same edits.

For each N, under `strace -f -e inject=SYSCALLS:signal=KILL:when=N` (strace counts per
syscall and per process, so the Nth call of any one of them in any one process is killed),
with SYSCALLS all seven, then each group alone (unlink, rename, truncate; see GROUPS), then
`recover` and `status` run plainly, and the install is checked:

- lost: a file of HEAD's tree missing, or an edit of the operator's not there byte for byte;
- torn: a patch neither whole nor absent;
- wrong exit: `status` 0 while a patch is not in place, or `recover`/`status` exit 1.

    python tests/benchmarks/kill_sweep.py [--command update|apply] [--every K]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))  # run as a script too
from tests.helpers import diff_of

SYSCALLS = "unlink,unlinkat,rename,renameat,renameat2,truncate,ftruncate"
# strace counts each syscall apart, in each process: with all of them injected, the Nth call
# of whichever comes first kills; each group alone reaches the Nth call of that group too.
GROUPS = {
    "all": SYSCALLS,
    "unlink": "unlink,unlinkat",
    "rename": "rename,renameat,renameat2",
    "truncate": "truncate,ftruncate",
}
GIT_ID = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
}
LINES = "".join(f"line {n}\n" for n in range(1, 31))
FILLERS = 12

# The operator's own work, and what it must read afterwards whatever the version.
README_NOTE = "A note the operator keeps locally.\n"
NOTES_FILE = "local-notes.txt"
NOTES = b"operator's notes\x00\xff binary tail\n"
USER_LINE = ("line 25\n", "line 25 operator\n")  # in app/a.py, which p1 patches too

PATCHES = {
    # name: {path: [(old line, new line)]}; a new file: {path: [("", whole text)]}
    "p1": {
        "app/a.py": [("line 5\n", "line 5 fixed\n")],
        "app/b.py": [("line 3\n", "line 3 fixed\n")],
    },
    "p2": {"app/c.py": [("line 8\n", "line 8 fixed\n")], "app/new_mod.py": [("", "NEW = 1\n")]},
}


def git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=repo, input=stdin, capture_output=True, check=True,
        env={**os.environ, **GIT_ID},
    )  # fmt: skip
    return proc.stdout.decode().strip()


def _commit(repo: Path, files: dict[str, str], message: str, tag: str) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    git(repo, "tag", tag)


def _patch_diff(install: Path, name: str) -> str:
    edits = {}
    for path, changes in PATCHES[name].items():
        text = (install / path).read_text() if (install / path).exists() else ""
        for old, new in changes:
            text = text.replace(old, new, 1) if old else new
        edits[path] = text
    return diff_of(install, edits)


def pk(install: Path, patches: Path, *args: str, prefix: tuple[str, ...] = ()):
    command = [*prefix, sys.executable, "-m", "patchkeeper", *args]
    command += ["--install", str(install), "--patches", str(patches)]
    env = {**os.environ, **GIT_ID, "NO_COLOR": "1"}
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False)


@dataclass
class Fixture:
    root: Path

    @property
    def install(self) -> Path:
        return self.root / "install"

    @property
    def patches(self) -> Path:
        return self.root / "patches"


def build(root: Path, command: str) -> Fixture:
    """The starting state for COMMAND (update or apply), built in ROOT."""
    upstream = root / "upstream"
    upstream.mkdir(parents=True)
    git(upstream, "init", "-q", "-b", "main")
    files = {"README.md": "# upstream\n" + LINES}
    files |= {f"app/{name}.py": LINES for name in "abc"}
    files |= {f"lib/f{n}.py": f"F = {n}\n" for n in range(FILLERS)}
    _commit(upstream, files, "release 1.0", "v1.0.0")
    fixture = Fixture(root)
    subprocess.run(["git", "clone", "-q", str(upstream), str(fixture.install)], check=True)
    fixture.patches.mkdir()
    for name in PATCHES:
        (fixture.patches / f"{name}.patch").write_text(
            f"Description: fix {name}\nSmoke: none (a kill-sweep fixture)\n---\n"
            + _patch_diff(fixture.install, name)
        )
    (fixture.patches / "series").write_text("".join(f"{name}.patch\n" for name in PATCHES))
    (fixture.patches / "patchkeeper.toml").write_text(
        '[update]\ncommand = ["git", "pull", "-q", "--ff-only"]\n'
    )
    if command == "update":
        proc = pk(fixture.install, fixture.patches, "apply")
        assert proc.returncode == 0, proc.stdout + proc.stderr
    with (fixture.install / "README.md").open("a") as handle:
        handle.write(README_NOTE)
    (fixture.install / NOTES_FILE).write_bytes(NOTES)
    a_py = fixture.install / "app/a.py"
    a_py.write_text(a_py.read_text().replace(*USER_LINE))
    if command == "update":
        changed = {"README.md": "# upstream, release 1.1\n" + LINES, "lib/new.py": "NEW_LIB = 1\n"}
        changed |= {f"lib/f{n}.py": f"F = {n} + 1\n" for n in range(0, FILLERS, 2)}
        (upstream / "lib/f1.py").unlink()
        _commit(upstream, changed, "release 1.1", "v1.1.0")
    return fixture


@dataclass
class Verdict:
    killed: bool
    lost: list[str] = field(default_factory=list)
    torn: list[str] = field(default_factory=list)
    wrong_exit: list[str] = field(default_factory=list)

    @property
    def recovered(self) -> bool:
        return not (self.lost or self.torn or self.wrong_exit)


def _head_file(install: Path, path: str) -> str | None:
    proc = subprocess.run(
        ["git", "show", f"HEAD:{path}"], cwd=install, capture_output=True, check=False
    )
    return proc.stdout.decode() if proc.returncode == 0 else None


def _expected(install: Path, path: str, with_patches: set[str]) -> str | None:
    """PATH as it must read now: HEAD's, with the patches in WITH_PATCHES and the edits."""
    text = _head_file(install, path)
    for name in PATCHES:
        for old, new in PATCHES[name].get(path, []):
            if name in with_patches:
                text = text.replace(old, new, 1) if old else new  # type: ignore[union-attr]
    if text is not None and path == "README.md":
        text += README_NOTE
    if text is not None and path == "app/a.py":
        text = text.replace(*USER_LINE)
    return text


def _presence(install: Path, name: str) -> str:
    seen = []
    for path, edits in PATCHES[name].items():
        target = install / path
        text = target.read_text() if target.is_file() else None
        for old, new in edits:
            if not old:
                seen.append(text == new)
            else:
                seen.append(text is not None and new in text)
    return "present" if all(seen) else "absent" if not any(seen) else "partial"


def check(fixture: Fixture, *, recover: bool = True) -> Verdict:
    """Recover (unless told not to), then judge the install (see the module docstring)."""
    install, patches = fixture.install, fixture.patches
    verdict = Verdict(killed=True)
    recovered = pk(install, patches, "recover") if recover else None
    if recovered is not None and recovered.returncode == 1:
        verdict.wrong_exit.append(f"recover exit 1: {recovered.stdout[-300:]}{recovered.stderr}")
    tracked = git(install, "ls-tree", "-r", "--name-only", "-z", "HEAD").split("\0")
    verdict.lost += [f"missing {p}" for p in tracked if p and not (install / p).exists()]
    presence = {name: _presence(install, name) for name in PATCHES}
    verdict.torn += [f"{name} partial" for name, seen in presence.items() if seen == "partial"]
    present = {name for name, seen in presence.items() if seen == "present"}
    for path in ("README.md", "app/a.py"):
        target = install / path
        if target.is_file() and target.read_text() != _expected(install, path, present):
            verdict.lost.append(f"{path} differs from HEAD's with the patches in place and edits")
    notes = install / NOTES_FILE
    if not notes.is_file() or notes.read_bytes() != NOTES:
        verdict.lost.append(f"{NOTES_FILE} lost or changed")
    status = pk(install, patches, "status")
    if status.returncode == 1:
        verdict.wrong_exit.append(f"status exit 1: {status.stderr.strip()[-200:]}")
    if status.returncode == 0 and present != set(PATCHES):
        verdict.wrong_exit.append(f"status 0 with only {sorted(present)} in place")
    return verdict


def strace_prefix(group: str, n: int, log: Path) -> tuple[str, ...]:
    inject = f"inject={GROUPS[group]}:signal=KILL:when={n}"
    return ("strace", "-f", "-o", str(log), "-e", f"trace={SYSCALLS}",
            "-e", inject)  # fmt: skip


def max_calls(template: Fixture, command: str, work: Path) -> dict[str, int]:
    """Per group, the largest count of one of its syscalls in one process over a clean run:
    the Ns beyond it kill nothing."""
    fixture = copy(template, work / "count")
    log = work / "count.log"
    prefix = ("strace", "-f", "-o", str(log), "-e", f"trace={SYSCALLS}")
    pk(fixture.install, fixture.patches, command, prefix=prefix)
    counts: Counter[tuple[str, str]] = Counter()
    for line in log.read_text().splitlines():
        match = re.match(r"(\d+)\s+(\w+)\(", line)
        if match:
            counts[match.groups()] += 1
    shutil.rmtree(fixture.root)
    log.unlink()
    return {
        group: max((n for (_, call), n in counts.items() if call in calls.split(",")), default=0)
        for group, calls in GROUPS.items()
    }


def copy(template: Fixture, root: Path) -> Fixture:
    shutil.copytree(template.root, root, symlinks=True)
    return Fixture(root)


def run_point(template: Fixture, command: str, group: str, n: int, work: Path) -> Verdict:
    fixture = copy(template, work / f"{command}-{group}-{n}")
    log = work / f"{command}-{group}-{n}.log"
    pk(fixture.install, fixture.patches, command, prefix=strace_prefix(group, n, log))
    killed = "killed by SIGKILL" in log.read_text()
    verdict = check(fixture)
    verdict.killed = killed
    shutil.rmtree(fixture.root)
    log.unlink()
    return verdict


def disk_full_point(template: Fixture, command: str, n: int, work: Path) -> Verdict:
    """COMMAND's Nth write() in its own process fails with ENOSPC: it must end in one error
    line naming the cause, exit 7 (or 0 when the write was one it can do without), with
    nothing half-written (no temporary file left) before `recover`; after it, as above."""
    fixture = copy(template, work / f"{command}-enospc-{n}")
    inject = ("-e", "trace=write", "-e", f"inject=write:error=ENOSPC:when={n}")
    proc = pk(
        fixture.install, fixture.patches, command, prefix=("strace", "-o", "/dev/null", *inject)
    )
    errors = [line for line in proc.stderr.splitlines() if line.startswith("patchkeeper: error")]
    state = fixture.install / ".git" / "patchkeeper"
    stray = [*fixture.install.rglob(".patchkeeper-*"), *state.rglob("*.tmp")]
    verdict = check(fixture)
    verdict.killed = proc.returncode != 0
    if proc.returncode not in (0, 7):
        verdict.wrong_exit.append(f"exit {proc.returncode} on ENOSPC: {proc.stderr[-300:]}")
    elif proc.returncode == 7 and not (len(errors) == 1 and "No space left" in errors[0]):
        verdict.wrong_exit.append(f"not one line naming the cause: {errors}")
    verdict.lost += [f"half-written {path.name}" for path in stray]
    shutil.rmtree(fixture.root)
    return verdict


Point = tuple[str, int]  # (group, N)


def sweep(
    command: str, work: Path, choose=lambda most: {g: range(1, n + 1) for g, n in most.items()}
) -> tuple[dict[str, int], list[tuple[Point, Verdict]]]:
    """Kill COMMAND at each point CHOOSE picks from the most calls per group (default: every
    N of every group), recover, and judge."""
    template = build(work / "template", command)
    most = max_calls(template, command, work)
    points = [(group, n) for group, ns in choose(most).items() for n in ns]
    return most, [((g, n), run_point(template, command, g, n, work)) for g, n in points]


def summary(command: str, most: dict[str, int], verdicts: list[tuple[Point, Verdict]]) -> str:
    killed = [v for _, v in verdicts if v.killed]
    lost = sum(1 for _, v in verdicts if v.lost or v.torn)
    wrong = sum(1 for _, v in verdicts if v.wrong_exit)
    ok = sum(1 for _, v in verdicts if v.recovered)
    ranges = ", ".join(f"{group} 1..{n}" for group, n in most.items())
    return (
        f"{command}: N over {ranges}: {len(verdicts)} runs ({len(killed)} killed something): "
        f"{ok} recovered, {lost} lost or torn, {wrong} wrong exits"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--command", choices=("update", "apply"), action="append")
    parser.add_argument("--every", type=int, default=1, help="take every Kth N only")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each failure")
    args = parser.parse_args()
    if shutil.which("strace") is None:
        raise SystemExit("strace is not installed")
    with tempfile.TemporaryDirectory(prefix="pk-kill-") as tmp:
        for command in args.command or ("update", "apply"):
            work = Path(tmp) / command
            work.mkdir()
            most, verdicts = sweep(
                command,
                work,
                lambda most: {g: range(1, n + 1, args.every) for g, n in most.items()},
            )
            print(summary(command, most, verdicts), flush=True)
            if args.verbose:
                for (group, n), verdict in verdicts:
                    if not verdict.recovered:
                        problems = verdict.lost + verdict.torn + verdict.wrong_exit
                        print(f"  {group} N={n}: {problems}")


if __name__ == "__main__":
    main()
