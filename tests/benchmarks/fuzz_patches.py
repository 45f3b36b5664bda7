"""Fuzz the patch loader and the engine with mutated patch files (issue 9, "Done when").

Each case mutates one of a few seed patches (a git diff that modifies, creates, deletes,
renames, changes a mode or adds a symlink; a quilt patch; a format-patch mail) one to three
times, writes it as a one-patch set, and runs `lint`, `status`, `check --ref v1.0.0` and
`apply` on a small install, in-process (the CLI's own `main`, so each command costs only its
git processes). What is counted, and must be 0:

- exit 1 (an internal error) from any command;
- a traceback in any output;
- a multi-line error: an exit-2 run whose stderr is not exactly one line, or a lint problem
  line that is not `FILE:LINE: problem`;
- a tree changed by a command that exited non-zero (the work tree, and the state under
  .git/patchkeeper), or anything written next to the install;
- a command that did not end within the time limit.

An exit 1 on a patch lint accepted is looked at once more: when `git apply` itself dies by a
signal on it (SIGABRT, exit 134 in a shell), that is issue 9 item 1 (git crashing on a patch)
and it is listed apart. Run it by hand:

    python tests/benchmarks/fuzz_patches.py --cases 10000 --jobs 2 [--seed 1] [--keep DIR]

The suite runs a small fixed-seed share of it (tests/test_fuzz.py).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import multiprocessing
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GIT_ID = {
    "GIT_AUTHOR_NAME": "Fuzz",
    "GIT_AUTHOR_EMAIL": "fuzz@example.invalid",
    "GIT_COMMITTER_NAME": "Fuzz",
    "GIT_COMMITTER_EMAIL": "fuzz@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
COMMAND_TIMEOUT = 60  # seconds; a command past it counts as a hang
LINES = "".join(f"line {n}\n" for n in range(1, 41))
FILES = {
    "app.py": LINES,
    "lib/util.py": "".join(f"def f{n}():\n    return {n}\n\n" for n in range(12)),
    "doomed.txt": "to be deleted\n",
    "old_name.txt": "renamed\nfile\n",
    "run.sh": "#!/bin/sh\necho hi\n",
    "dos.txt": LINES.replace("\n", "\r\n"),
}
EDITS = {  # path -> new content (None: deleted); one seed patch each group
    "modify": {
        "app.py": LINES.replace("line 5\n", "line 5 fixed\n").replace("line 30\n", "thirty\n")
    },
    "create": {"new/feature.py": "print('new')\n", "lib/util.py": FILES["lib/util.py"] + "x\n"},
    "delete": {"doomed.txt": None},
    "crlf": {"dos.txt": FILES["dos.txt"].replace("line 7\r\n", "line seven\r\n")},
}
HEADER = (
    "Description: A fix\nOrigin: vendor\nForwarded: no\nApplies-To: >=1.0\n"
    "Upstream-Has:\n app.py: never there\nSmoke: check_one\n---\n"
)


def git(repo: Path, *args: str, stdin: bytes | None = None, check: bool = True) -> bytes:
    proc = subprocess.run(
        ["git", *args], cwd=repo, input=stdin, capture_output=True,
        env={**os.environ, **GIT_ID}, check=check,
    )  # fmt: skip
    return proc.stdout


# ---------------------------------------------------------------- seeds


def make_install(root: Path) -> Path:
    repo = root / "install"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for name, text in FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_bytes(text.encode())
    os.chmod(repo / "run.sh", 0o644)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "upstream")
    git(repo, "tag", "v1.0.0")
    return repo


def _diff(repo: Path, change: callable) -> bytes:  # type: ignore[valid-type]
    change()
    git(repo, "add", "-A")
    diff = git(repo, "diff", "--cached", "-M")
    git(repo, "reset", "-q", "--hard")
    git(repo, "clean", "-qfdx")
    return diff


def make_seeds(repo: Path) -> list[bytes]:
    seeds: list[bytes] = []
    for edits in EDITS.values():

        def change(edits: dict[str, str | None] = edits) -> None:
            for name, text in edits.items():
                target = repo / name
                if text is None:
                    target.unlink()
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(text.encode())

        seeds.append(HEADER.encode() + _diff(repo, change))
    seeds.append(
        HEADER.encode() + _diff(repo, lambda: (repo / "old_name.txt").rename(repo / "new_name.txt"))
    )
    seeds.append(HEADER.encode() + _diff(repo, lambda: os.chmod(repo / "run.sh", 0o755)))
    seeds.append(HEADER.encode() + _diff(repo, lambda: os.symlink("app.py", repo / "link.py")))
    quilt = _diff(repo, lambda: (repo / "app.py").write_text(LINES.replace("line 9\n", "9\n")))
    quilt = re.sub(rb"(?m)^(diff --git .*|index .*)\n", b"", quilt)
    seeds.append(b"Description: quilt\n\nIndex: pkg/app.py\n" + b"=" * 67 + b"\n" + quilt)
    mail = _diff(repo, lambda: (repo / "app.py").write_text(LINES.replace("line 2\n", "2\n")))
    seeds.append(
        b"From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\n"
        b"From: A <a@example.invalid>\nSubject: [PATCH] mail\n\nbody\n---\n app.py | 2 +-\n\n"
        + mail
        + b"-- \n2.39.5\n\n"
    )
    return seeds


# ---------------------------------------------------------------- mutations

TOKENS = [
    b"new file mode 100644", b"lew file mode 100644", b"new file mode 120000",
    b"new file mode 160000", b"new file mode 777777", b"deleted file mode 100644",
    b"old mode 100644", b"new mode 100755", b"new mode 120000", b"similarity index 90%",
    b"rename from app.py", b"rename to ../escape.py", b"copy from app.py", b"copy to x.py",
    b"index 0000000..1111111 100755", b"index abc..def", b"GIT binary patch", b"literal 4",
    b"Binary files a/x and b/x differ", b"\\ No newline at end of file", b"@@ -1 +1 @@",
    b"@@ -0,0 +1,3 @@", b"@@ -99999999999,1 +1,99999999999 @@", b"@@ -1,-1 +1,1 @@",
    b"--- /dev/null", b"+++ /dev/null", b"--- a/app.py", b"+++ b/app.py",
    b"diff --git a/app.py b/app.py", b"diff --git a/x b/y", b'diff --git "a/\\303" "b/\\303"',
    b"diff --git a/../x b/../x", b"diff --git a/.git/config b/.git/config",
    b"diff --git a//etc/passwd b//etc/passwd", b"Applies-To: >=banana", b"Applies-To: <0",
    b"Applies-To: ==1.0.*,!=1.0.0", b"Upstream-Fixed-In: >=0", b"Smoke: ../../x",
    b"Smoke: a, , b", b"Upstream-Has:\n app.py: line 5", b"Upstream-Has:\n ../x: y",
    b"Upstream-Has: app.py:", b"Base: zzz", b"Description:", b"X-Mine: ok", b"Colour: red",
    b"From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001", b"---", b"-- ",
    b"+\x00", b" \x0bline", b"\x1b[31m", b"\xff\xfe", "é".encode(), b"\r", b"\t",
]  # fmt: skip


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def mutate(data: bytes, rng: random.Random, seeds: list[bytes]) -> bytes:
    lines = _lines(data)
    pick = rng.randrange(len(lines))
    operator = rng.randrange(17)
    if operator == 0:  # flip a byte
        if data:
            at = rng.randrange(len(data))
            data = data[:at] + bytes([rng.randrange(256)]) + data[at + 1 :]
        return data
    if operator == 1:  # insert a control character
        at = rng.randrange(len(data) + 1)
        return data[:at] + bytes([rng.choice([*range(32), 127])]) + data[at:]
    if operator == 2:
        del lines[pick]
    elif operator == 3:
        lines.insert(pick, lines[pick])
    elif operator == 4:
        other = rng.randrange(len(lines))
        lines[pick], lines[other] = lines[other], lines[pick]
    elif operator == 5:
        lines[pick] = rng.choice(TOKENS)
    elif operator == 6:
        lines.insert(pick, rng.choice(TOKENS))
    elif operator == 7:  # renumber a hunk header
        hunks = [i for i, line in enumerate(lines) if line.startswith(b"@@")]
        if hunks:
            i = rng.choice(hunks)
            numbers = [str(rng.choice([0, 1, 2, 7, 40, 41, 10**6, 2**31, 2**63])) for _ in "abcd"]
            lines[i] = f"@@ -{numbers[0]},{numbers[1]} +{numbers[2]},{numbers[3]} @@".encode()
    elif operator == 8:  # CRLF, all or part
        start = rng.randrange(len(lines))
        lines = lines[:start] + [line + b"\r" for line in lines[start:]]
    elif operator == 9:
        return data[: rng.randrange(len(data) + 1)]
    elif operator == 10:  # a hostile path wherever a path is named
        hostile = rng.choice([b"../up.py", b"/etc/passwd", b".git/hooks/x", b"a b.py",
                              b'"q\\"x"', b"x" * 300, "ü/ß.py".encode(), b"", b"lib"])  # fmt: skip
        return re.sub(rb"app\.py", hostile, data, count=rng.randrange(1, 4))
    elif operator == 11:  # change the first character of a hunk line
        body = [i for i, line in enumerate(lines) if line[:1] in (b" ", b"+", b"-")]
        if body:
            i = rng.choice(body)
            lines[i] = rng.choice([b" ", b"+", b"-", b"\\", b"", b"@"]) + lines[i][1:]
    elif operator == 12:
        lines.insert(pick, b"+" + b"y" * rng.choice([1000, 100_000]))
    elif operator == 13:  # splice with another seed
        other = _lines(rng.choice(seeds))
        cut = rng.randrange(len(other))
        lines = lines[:pick] + other[cut:]
    elif operator == 14:
        lines.insert(pick, b"\xc3\x28 not utf-8")
    elif operator == 15:  # a typo in a git header keyword (`new file mode` -> `lew file mode`)
        keywords = [i for i, line in enumerate(lines) if re.match(rb"(new|deleted|old|index|"
                    rb"similarity|rename|copy) ", line)]  # fmt: skip
        if keywords:
            i = rng.choice(keywords)
            at = rng.randrange(min(len(lines[i]), 8))
            lines[i] = lines[i][:at] + bytes([rng.randrange(97, 123)]) + lines[i][at + 1 :]
    else:  # a header field with odd spacing or a control character
        lines.insert(rng.randrange(min(len(lines), 8) + 1), rng.choice(
            [b"Description: a\x0bb", b" continued", b"Forwarded:no", b"Bug-Ubuntu: 1",
             b"Applies-To: >=1.0\x0c", b"description: lower"]))  # fmt: skip
    return b"\n".join(lines)


# ---------------------------------------------------------------- running the CLI in-process


def run_command(argv: list[str]) -> tuple[int, str, str, bool]:
    """(exit code, stdout, stderr, timed out): `patchkeeper ARGV` through the CLI's `main`."""
    from click.testing import CliRunner

    from patchkeeper import cli

    def alarm(signum: int, frame: Any) -> None:
        raise TimeoutError

    runner = CliRunner()
    old = signal.signal(signal.SIGALRM, alarm)
    code, timed_out = 0, False
    saved_argv = sys.argv
    with runner.isolation(env={"NO_COLOR": "1"}) as (out, err, _):
        sys.argv = ["patchkeeper", *argv]
        signal.alarm(COMMAND_TIMEOUT)
        try:
            cli.main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except TimeoutError:
            code, timed_out = -1, True
        except BaseException as exc:  # main() must not let anything out: count it
            import traceback

            code = 1
            sys.stderr.write("Traceback (escaped main)\n" + traceback.format_exc())
            del exc
        finally:
            signal.alarm(0)
            sys.argv = saved_argv
            sys.stdout.flush()
            sys.stderr.flush()
        stdout = out.getvalue().decode("utf-8", errors="replace")
        stderr = err.getvalue().decode("utf-8", errors="replace")
    signal.signal(signal.SIGALRM, old)
    return code, stdout, stderr, timed_out


def snapshot(repo: Path) -> dict[str, bytes]:
    """The work tree and .git/patchkeeper (the lock file aside), as bytes per path."""
    found: dict[str, bytes] = {}
    for path in sorted(repo.rglob("*")):
        relative = path.relative_to(repo).as_posix()
        if relative.startswith(".git/") and not relative.startswith(".git/patchkeeper/"):
            continue
        if relative in (".git/patchkeeper/lock", ".git"):
            continue
        if path.is_symlink():
            found[relative] = b"-> " + os.readlink(path).encode()
        elif path.is_file():
            found[relative] = path.read_bytes()
        elif path.is_dir() and not any(path.iterdir()):
            found[relative] = b"<empty dir>"
    return found


def reset(repo: Path) -> None:
    git(repo, "reset", "-q", "--hard", "v1.0.0")
    git(repo, "clean", "-qfdx")
    shutil.rmtree(repo / ".git" / "patchkeeper", ignore_errors=True)


def git_dies_on(repo: Path, patch_file: Path) -> int | None:
    """The signal `git apply --check` dies by on the diff of PATCH_FILE, or None."""
    from patchkeeper.patchset.parse import parse_patch_file

    parsed, _ = parse_patch_file(patch_file)
    if parsed is None:
        return None
    with tempfile.TemporaryDirectory() as scratch:
        env = {**os.environ, **GIT_ID, "GIT_INDEX_FILE": str(Path(scratch) / "index")}
        subprocess.run(["git", "read-tree", "v1.0.0"], cwd=repo, env=env, check=True)
        for flags in ([], ["--reverse"], ["--3way"]):
            proc = subprocess.run(["git", "apply", "--cached", "--check", *flags, "-"],
                                  cwd=repo, env=env, input=parsed.diff, capture_output=True,
                                  check=False)  # fmt: skip
            if proc.returncode < 0 or proc.returncode > 128:
                return -proc.returncode if proc.returncode < 0 else proc.returncode - 128
    return None


# ---------------------------------------------------------------- one worker


@dataclass
class Tally:
    cases: int = 0
    runs: int = 0
    exit_codes: collections.Counter = field(default_factory=collections.Counter)
    lint_accepted: int = 0
    exit_1: list[dict[str, Any]] = field(default_factory=list)
    git_crashes: list[dict[str, Any]] = field(default_factory=list)
    tracebacks: list[dict[str, Any]] = field(default_factory=list)
    multi_line: list[dict[str, Any]] = field(default_factory=list)
    tree_changed: list[dict[str, Any]] = field(default_factory=list)
    outside_written: list[dict[str, Any]] = field(default_factory=list)
    hangs: list[dict[str, Any]] = field(default_factory=list)

    def merge(self, other: Tally) -> None:
        self.cases += other.cases
        self.runs += other.runs
        self.exit_codes.update(other.exit_codes)
        self.lint_accepted += other.lint_accepted
        for name in ("exit_1", "git_crashes", "tracebacks", "multi_line", "tree_changed",
                     "outside_written", "hangs"):  # fmt: skip
            getattr(self, name).extend(getattr(other, name))

    def failures(self) -> int:
        return (
            len(self.exit_1) + len(self.tracebacks) + len(self.multi_line)
            + len(self.tree_changed) + len(self.outside_written) + len(self.hangs)
        )  # fmt: skip

    def summary(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "command runs": self.runs,
            "exit codes": dict(sorted(self.exit_codes.items())),
            "patches lint accepted": self.lint_accepted,
            "exit 1 (internal error)": len(self.exit_1),
            "  of which git died by a signal (item 1)": len(self.git_crashes),
            "tracebacks": len(self.tracebacks),
            "multi-line errors": len(self.multi_line),
            "trees changed on a non-zero exit": len(self.tree_changed),
            "written outside the install": len(self.outside_written),
            "hangs": len(self.hangs),
        }


_PROBLEM_LINE = re.compile(r"^.+:\d+: .+$")


def judge(
    tally: Tally, command: str, result: tuple[int, str, str, bool], case: dict[str, Any]
) -> None:
    code, stdout, stderr, timed_out = result
    tally.runs += 1
    tally.exit_codes[f"{command} {code}"] += 1
    record = {**case, "command": command, "exit": code, "stderr": stderr[-600:]}
    if timed_out:
        tally.hangs.append(record)
        return
    if code == 1:
        tally.exit_1.append(record)
    if "Traceback" in stdout or "Traceback" in stderr:
        tally.tracebacks.append(record)
    err_lines = stderr.splitlines()
    if command == "lint":
        bad = [line for line in stdout.splitlines() if not _PROBLEM_LINE.match(line)]
        if code == 2 and (bad or len(err_lines) != 1):
            tally.multi_line.append({**record, "lines": bad[:3]})
    elif code == 2 and len(err_lines) != 1:
        tally.multi_line.append(record)


def run_case(
    tally: Tally, root: Path, repo: Path, seeds: list[bytes], rng: random.Random, number: int
) -> None:
    seed_index = rng.randrange(len(seeds))
    data = seeds[seed_index]
    for _ in range(rng.choice([1, 1, 2, 3])):
        data = mutate(data, rng, seeds)
    patches = root / "patches"
    shutil.rmtree(patches, ignore_errors=True)
    patches.mkdir()
    (patches / "smoke").mkdir()
    (patches / "smoke" / "check_one.py").write_text("")  # the seeds' `Smoke:` name (lint)
    in_folder = rng.random() < 0.2
    if in_folder:
        (patches / "fix").mkdir()
        (patches / "fix" / "a.patch").write_bytes(data)
        (patches / "series").write_text("fix\n")
        patch_file = patches / "fix" / "a.patch"
    else:
        (patches / "fix.patch").write_bytes(data)
        (patches / "series").write_text("fix.patch\n")
        patch_file = patches / "fix.patch"
    case = {"case": number, "seed": seed_index, "patch": data.decode("utf-8", "replace")[:4000]}
    tally.cases += 1
    where = ["--install", str(repo), "--patches", str(patches)]
    lint = run_command(["lint", "--patches", str(patches)])
    judge(tally, "lint", lint, case)
    if lint[0] == 0:
        tally.lint_accepted += 1
    neighbours = sorted(p.name for p in root.iterdir())
    for command, argv in (
        ("status", ["status", *where]),
        ("check", ["check", "--ref", "v1.0.0", *where]),
        ("apply", ["apply", "--no-smoke", *where]),
    ):
        before = snapshot(repo)
        result = run_command(argv)
        judge(tally, command, result, case)
        # apply --no-smoke: what it writes is not proven, exit 5 (ATTENTION)
        green = (0, 5) if command == "apply" else (0,)
        if result[0] not in green and snapshot(repo) != before:
            tally.tree_changed.append({**case, "command": command, "exit": result[0]})
        if result[0] == 1 and lint[0] == 0 and (sig := git_dies_on(repo, patch_file)):
            tally.git_crashes.append({**case, "command": command, "signal": sig})
    if sorted(p.name for p in root.iterdir()) != neighbours:
        tally.outside_written.append(case)
    reset(repo)


def worker(args: tuple[int, int, int, str | None]) -> Tally:
    first, count, seed, keep = args
    os.environ.update(GIT_ID)
    os.environ.pop("PATCHKEEPER_PATCHES", None)
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="patchkeeper-fuzz-") as scratch:
        root = Path(scratch)
        repo = make_install(root)
        seeds = make_seeds(repo)
        for number in range(first, first + count):
            rng = random.Random(f"{seed}-{number}")
            run_case(tally, root, repo, seeds, rng, number)
        if keep:
            shutil.copytree(root, Path(keep) / f"worker-{first}", symlinks=True)
    return tally


def fuzz(cases: int, jobs: int = 1, seed: int = 1, keep: str | None = None) -> Tally:
    share = -(-cases // jobs)
    chunks = [(i * share, min(share, cases - i * share), seed, keep) for i in range(jobs)]
    chunks = [chunk for chunk in chunks if chunk[1] > 0]
    total = Tally()
    if jobs == 1:
        for chunk in chunks:
            total.merge(worker(chunk))
        return total
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        for tally in pool.imap_unordered(worker, chunks):
            total.merge(tally)
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", help="copy each worker's last install and patch set here")
    parser.add_argument("--report", help="write every finding as JSON to this file")
    options = parser.parse_args()
    started = time.monotonic()
    tally = fuzz(options.cases, options.jobs, options.seed, options.keep)
    summary = tally.summary()
    summary["seconds"] = round(time.monotonic() - started, 1)
    for key, value in summary.items():
        print(f"{key:<45} {value}")
    if options.report:
        findings = {name: getattr(tally, name) for name in (
            "exit_1", "git_crashes", "tracebacks", "multi_line", "tree_changed",
            "outside_written", "hangs")}  # fmt: skip
        Path(options.report).write_text(json.dumps({"summary": summary, **findings}, indent=1))
    for name in ("exit_1", "tracebacks", "multi_line", "tree_changed", "hangs"):
        for finding in getattr(tally, name)[:3]:
            print(f"\n{name}: case {finding['case']} ({finding.get('command')}):")
            print(f"  stderr: {finding.get('stderr', '')!r}")
            print("  patch:\n    " + finding["patch"][:1500].replace("\n", "\n    "))
    return 1 if tally.failures() else 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
