"""CI mode at scale: `patchkeeper check`, `update` and CLI start against their references, on
the synthetic upstream of synthetic.py (20,000 files, 50 tags, about 200 files changed per
tag, with offsets, 3-way merges, conflicts and an upstream-has-it), in one run, side by side.

    python3 tests/benchmarks/bench_ci.py                   # the full run (about 25 minutes)
    python3 tests/benchmarks/bench_ci.py --quick           # small and fast, to see it works

It prints, with its own parameters:

- `check` for M patches x T tags (M in --sizes, T in --tag-counts; the newest T tags)
  against the per-patch plumbing floor in bash (floor.sh: per tag and patch, `ls-tree` of the
  touched paths into a scratch index and `git apply --cached --check`);
- `check` against a checkout of the tag (worktree_check.sh: `git worktree add` and
  `git apply --check` per patch, how quilt, rebase-helper and devtool check) for T = 1;
- `update` with 10 patches and no smoke check against the bare updater it runs
  (`git pull --ff-only`), each from the same state (the tag before the newest, patches applied);
- `patchkeeper --version` and `--help` against `python3 -c pass`.

Times are medians of --runs runs of the whole process (wall clock), the two commands of a row
run in turn (A B A B ...), after one warm-up each unless a run takes over 10 s. "git" is the
number of git processes one run starts (counted by a `git` on PATH that logs and runs the real
one, in a separate run), "peak" the largest resident set of any one process of a run (the
kernel's own figure). Bytecode is compiled first. Run by hand, not in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from tests.benchmarks.synthetic import Upstream, build  # noqa: E402

FLOOR = HERE / "floor.sh"
WORKTREE = HERE / "worktree_check.sh"
UPDATE_COMMAND = ["git", "pull", "--ff-only", "-q", "origin", "main"]


@dataclass
class Measured:
    seconds: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # user + system, its processes together
    peak_kib: list[int] = field(default_factory=list)
    codes: set[int] = field(default_factory=set)
    git: int | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def peak_mib(self) -> float:
        return max(self.peak_kib) / 1024 if self.peak_kib else 0.0


TIME = "/usr/bin/time" if Path("/usr/bin/time").exists() else None


def run_once(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int, int]:
    """(wall seconds, peak KiB of the largest process, exit code) of COMMAND."""
    seconds, _, peak, code = run_measured(command, cwd, env)
    return seconds, peak, code


def run_measured(
    command: list[str], cwd: Path, env: dict[str, str]
) -> tuple[float, float, int, int]:
    """(wall seconds, CPU seconds, peak KiB of the largest process, exit code) of COMMAND;
    the CPU seconds are its processes' user and system time, all of them.

    The peak comes from GNU time (`%M`) when it is there: a process forked from this one
    would otherwise inherit this one's high-water mark in the kernel's accounting."""
    with tempfile.NamedTemporaryFile("r", suffix=".peak") as peak_file:
        wrapped = [TIME, "-f", "%M", "-o", peak_file.name, *command] if TIME else command
        start = time.perf_counter()
        proc = subprocess.Popen(
            wrapped, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        proc.returncode = code
        peak = usage.ru_maxrss
        if TIME:
            text = peak_file.read().split()
            peak = int(text[-1]) if text and text[-1].isdigit() else 0
    return elapsed, usage.ru_utime + usage.ru_stime, peak, code


class Bench:
    def __init__(self, runs: int, root: Path) -> None:
        self.runs = runs
        self.env = {**os.environ, "NO_COLOR": "1", "LC_ALL": "C"}
        self.shim = root / "shim"
        self.shim.mkdir(exist_ok=True)
        real = shutil.which("git")
        assert real, "git is not on PATH"
        (self.shim / "git").write_text(f'#!/bin/sh\necho x >> "$GIT_COUNT_LOG"\nexec {real} "$@"\n')
        (self.shim / "git").chmod(0o755)
        self.count_log = root / "git-count.log"

    def count_git(self, command: list[str], cwd: Path, setup: Callable[[], None] | None) -> int:
        if setup:
            setup()
        self.count_log.write_text("")
        env = {
            **self.env,
            "PATH": f"{self.shim}{os.pathsep}{self.env['PATH']}",
            "GIT_COUNT_LOG": str(self.count_log),
        }
        subprocess.run(command, cwd=cwd, env=env, capture_output=True, check=False)
        return len(self.count_log.read_text().splitlines())

    def pair(
        self,
        a: list[str],
        b: list[str],
        cwd: Path,
        setup_a: Callable[[], None] | None = None,
        setup_b: Callable[[], None] | None = None,
        count: bool = True,
    ) -> tuple[Measured, Measured]:
        """A and B in turn, RUNS times each, after a warm-up of each (unless it is slow)."""
        results = (Measured(), Measured())
        commands = ((a, setup_a), (b, setup_b))
        for run in range(-1, self.runs):
            for (command, setup), measured in zip(commands, results, strict=True):
                if run == -1 and measured.seconds:
                    continue
                if setup:
                    setup()
                seconds, cpu, peak, code = run_measured(command, cwd, self.env)
                if run == -1 and seconds < 10:
                    continue  # the warm-up
                measured.seconds.append(seconds)
                measured.cpu.append(cpu)
                measured.peak_kib.append(peak)
                measured.codes.add(code)
        if count:
            results[0].git = self.count_git(a, cwd, setup_a)
            results[1].git = self.count_git(b, cwd, setup_b)
        return results


def compile_bytecode(code: Path = HERE.parent.parent) -> None:
    """Compile patchkeeper first: a run that compiles it (PYTHONDONTWRITEBYTECODE) is slower."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(code / "patchkeeper")],
        check=True,
        capture_output=True,
    )


def patchkeeper_command() -> list[str]:
    script = Path(sys.executable).parent / "patchkeeper"
    return [str(script)] if script.exists() else [sys.executable, "-m", "patchkeeper"]


def fmt_s(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def row(*cells: object) -> str:
    widths = (22, 10, 6, 7, 40, 10, 6, 16)
    return "  ".join(f"{c!s:<{w}}" for c, w in zip(cells, widths, strict=False)).rstrip()


def update_patch_set(
    upstream: Upstream, install: Path, root: Path, pk: list[str], env: dict[str, str]
) -> Path:
    """Ten patches that apply on both the tag before the newest and the newest (an update
    everyone would call green), with the bare updater as [update] command. Chosen by the
    measured patchkeeper's own `check --format json` (its documented schema, not its code)."""
    largest = upstream.patch_sets[max(upstream.patch_sets)]
    refs = [word for tag in upstream.tags[-2:] for word in ("--ref", tag)]
    answer = subprocess.run(
        [*pk, "check", "--install", str(upstream.install), "--patches", str(largest), *refs,
         "--format", "json"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    targets = json.loads(answer.stdout)["targets"]
    clean = [
        {p["name"] for p in target["patches"] if p["outcome"] in ("applied", "applied-offset")}
        for target in targets
    ]
    names = (largest / "series").read_text().split()
    good = [name.removesuffix(".patch") for name in names]
    good = [name for name in good if all(name in ok for ok in clean)][:10]
    folder = root / "patches-update"
    folder.mkdir(exist_ok=True)
    for name in good:
        shutil.copy(largest / f"{name}.patch", folder / f"{name}.patch")
    (folder / "series").write_text("".join(f"{name}.patch\n" for name in good))
    command = ", ".join(f'"{word}"' for word in UPDATE_COMMAND)
    (folder / "patchkeeper.toml").write_text(
        f'[install]\npath = "{install}"\n\n[update]\ncommand = [{command}]\n'
    )
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--tags", type=int, default=50)
    parser.add_argument("--changes", type=int, default=200)
    parser.add_argument("--seed", type=int, default=10, help="the workload generator's seed")
    parser.add_argument("--hunks", type=int, default=1, help="hunks per patch (patch size)")
    parser.add_argument("--sizes", default="10,50,200", help="patch set sizes M")
    parser.add_argument("--tag-counts", default="1,10,50", help="how many of the newest tags T")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--root", type=Path, help="build here and keep it (default: a temp dir)")
    parser.add_argument("--quick", action="store_true", help="2,000 files, 6 tags, 1 run")
    parser.add_argument("--skip", default="", help="comma list of: check, worktree, update, cli")
    args = parser.parse_args()
    if args.quick:
        args.files, args.tags, args.changes, args.runs = 2000, 6, 40, 1
        args.sizes, args.tag_counts = "10,50", "1,6"
    sizes = [int(x) for x in args.sizes.split(",")]
    tag_counts = [int(x) for x in args.tag_counts.split(",")]
    skip = set(filter(None, args.skip.split(",")))
    compile_bytecode()
    with tempfile.TemporaryDirectory(prefix="pk-bench-") as tmp:
        root = args.root or Path(tmp) / "upstream"
        started = time.monotonic()
        upstream = build(
            root,
            files=args.files,
            tags=args.tags,
            changes=args.changes,
            patches=max(sizes),
            sizes=tuple(sizes),
            seed=args.seed,
            hunks=args.hunks,
        )
        built = time.monotonic() - started
        report(args, upstream, sizes, tag_counts, skip, built)


def report(args, upstream: Upstream, sizes, tag_counts, skip, built: float) -> None:  # type: ignore[no-untyped-def]
    bench = Bench(args.runs, upstream.root)
    pk = patchkeeper_command()
    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout
    print(
        f"synthetic upstream: {upstream.files} files, {len(upstream.tags)} tags, about "
        f"{upstream.changes} files changed per tag (built in {built:.1f} s); patch sets of "
        f"{', '.join(map(str, sizes))} patches; {args.runs} run(s) per figure, medians; "
        f"{git_version.strip()}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs"
    )
    print()
    print(row("work", "pk", "git", "peak", "reference", "ref", "git", "ratio"))
    install = upstream.install
    linear = []
    if "check" not in skip:
        for size in sizes:
            for count in tag_counts:
                tags = upstream.tags[-count:]
                refs = [arg for tag in tags for arg in ("--ref", tag)]
                patches = str(upstream.patch_sets[size])
                check = [*pk, "check", "--install", str(install), "--patches", patches, *refs]
                floor = ["bash", str(FLOOR), str(install), str(upstream.floor_lists[size]), *tags]
                a, b = bench.pair(check, floor, install)
                ratio = a.median / b.median
                linear.append((size, count, a.median))
                print(
                    row(
                        f"check {size} x {count}", fmt_s(a.median), a.git, f"{a.peak_mib:.0f}M",
                        "per-patch plumbing floor (bash)", fmt_s(b.median), b.git,
                        f"{ratio:.2f}x",
                    )
                )  # fmt: skip
    if "worktree" not in skip:
        for size in (min(sizes), max(sizes)):
            tag = upstream.tags[-1]
            check = [*pk, "check", "--install", str(install), "--patches",
                     str(upstream.patch_sets[size]), "--ref", tag]  # fmt: skip
            tree = ["bash", str(WORKTREE), str(install), str(upstream.floor_lists[size]), tag]
            a, b = bench.pair(check, tree, install)
            print(
                row(
                    f"check {size} x 1", fmt_s(a.median), a.git, f"{a.peak_mib:.0f}M",
                    "worktree add + apply --check", fmt_s(b.median), b.git,
                    f"{b.median / a.median:.0f}x faster",
                )
            )  # fmt: skip
    if "update" not in skip:
        update_row(bench, upstream, pk)
    if "cli" not in skip:
        bare = [sys.executable, "-c", "pass"]
        for flag in ("--version", "--help"):
            a, b = bench.pair([*pk, flag], bare, upstream.root, count=False)
            print(
                row(
                    f"patchkeeper {flag}", fmt_s(a.median), "", f"{a.peak_mib:.0f}M",
                    "python3 -c pass", fmt_s(b.median), "", f"{a.median / b.median:.2f}x",
                )
            )  # fmt: skip
    if linear:
        print()
        print("check, ms per patch per tag (M x T):")
        for size, count, seconds in linear:
            print(f"  {size:>4} x {count:<3} {seconds * 1000 / (size * count):8.2f}")


def update_pair(bench: Bench, upstream: Upstream, pk: list[str]) -> tuple[Measured, Measured, int]:
    """`update` with up to 10 patches and no smoke check (A) against the bare updater (B),
    each from the same state: the tag before the newest, the patches applied for A. Returns
    A, B and the number of patches."""
    install = upstream.root / "install-update"
    if not install.exists():
        subprocess.run(["git", "clone", "-q", str(upstream.origin), str(install)], check=True)
    patches = update_patch_set(upstream, install, upstream.root, pk, bench.env)
    count = len((patches / "series").read_text().split())
    before = upstream.tags[-2]

    def reset() -> None:
        git = ["git", "-C", str(install)]
        subprocess.run([*git, "reset", "-q", "--hard", before], check=True)
        subprocess.run([*git, "clean", "-q", "-fdx"], check=True)
        shutil.rmtree(install / ".git" / "patchkeeper", ignore_errors=True)
        refs = subprocess.run(
            [*git, "for-each-ref", "--format=%(refname)", "refs/patchkeeper/"],
            capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
        for ref in refs:
            subprocess.run([*git, "update-ref", "-d", ref], check=True)

    def with_patches() -> None:
        reset()
        subprocess.run(
            [*pk, "apply", "--install", str(install), "--patches", str(patches)],
            capture_output=True, check=True, env=bench.env,
        )  # fmt: skip

    update = [*pk, "update", "--install", str(install), "--patches", str(patches)]
    a, b = bench.pair(update, UPDATE_COMMAND, install, with_patches, reset)
    return a, b, count


def update_row(bench: Bench, upstream: Upstream, pk: list[str]) -> None:
    a, b, count = update_pair(bench, upstream, pk)
    codes = ", ".join(map(str, sorted(a.codes)))
    # Run by run (each update beside the bare run next to it), so a load spike counts once.
    added = statistics.median(x - y for x, y in zip(a.seconds, b.seconds, strict=True))
    print(
        row(
            f"update, {count} patches", fmt_s(a.median), a.git, f"{a.peak_mib:.0f}M",
            "the bare updater (git pull --ff-only)", fmt_s(b.median), b.git,
            f"+{fmt_s(added)} paired (exit {codes}; target <= +500 ms)",
        )
    )  # fmt: skip


if __name__ == "__main__":
    main()
