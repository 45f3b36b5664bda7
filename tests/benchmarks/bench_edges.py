"""The edges of `check` and `update`, each against its own reference, in one run, side by side,
on the synthetic upstream of synthetic.py (20,000 files, 50 tags, about 200 files changed per
tag):

    python3 tests/benchmarks/bench_edges.py                # the full run (about 15 minutes)
    python3 tests/benchmarks/bench_edges.py --quick        # small and fast, to see it works

Rows (M patches; the target each is held to in brackets):

- variants: `check` of M patches with V variants each (disjoint `Applies-To` ranges) on the
  newest tag, against the plain M on that tag [<= 2x]; `lint` of both likewise (git reads
  every variant there: one process each);
- no-change tags: `check` of M patches over S tags that all carry the newest tag's tree,
  against the same M on one of them [<= 2x];
- many patches: `check` of 4M patches x 50 tags against M x 50 [linear: <= 4x];
- the small case: `check` 10 x 1 against the per-patch plumbing floor (floor.sh) [<= 2x], and
  `patchkeeper --version` against `python3 -c pass` [<= 2x];
- JSON: the peak memory of `check --format json` of M x 50 against the text format's [<= 1.5x]:
  patchkeeper's own process (git's processes map the pack and peak alike for both);
- update: `update` with 10 patches and no smoke check against the bare updater it runs
  (`git pull --ff-only`), each from the same state [overhead <= 0.5 s].

With `--before TREE` (a checkout of an earlier patchkeeper, e.g. `git worktree add` of main),
the variants rows also time that tree's `check` and `lint` against this one's, pair by pair in
the same run (both through `env PYTHONPATH=...`, so neither pays for it alone).

Times are wall clock, the two commands of a row in turn (A B A B ...) after a warm-up each
unless a run takes over 10 s; "ratio" is the median of the pair-by-pair ratios of wall time (a
machine whose speed drifts moves both of a pair), "cpu" the same of CPU time (user + system,
every process of the run: what a busy machine's waiting leaves out), "A" and "B" the medians
of wall time. Bytecode is compiled first. Run
by hand, not in CI.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from tests.benchmarks.bench_ci import (  # noqa: E402
    FLOOR,
    Bench,
    Measured,
    compile_bytecode,
    fmt_s,
    patchkeeper_command,
    update_row,
)
from tests.benchmarks.synthetic import Upstream, build, same_tree_tags, variant_set  # noqa: E402

# Runs patchkeeper in this very process and writes its own peak resident set (KiB) to a file:
# the peak of the largest process of a run would be a git's, which maps the whole pack.
_SELF_PEAK = (
    "import resource, runpy, sys\n"
    "out, sys.argv = sys.argv[1], ['patchkeeper', *sys.argv[2:]]\n"
    "try:\n"
    "    runpy.run_module('patchkeeper', run_name='__main__')\n"
    "finally:\n"
    "    open(out, 'w').write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))\n"
)


def paired(a: list[float], b: list[float]) -> float:
    """The median of A/B pair by pair (a slow warm-up is counted: the runs are paired from the
    last)."""
    count = min(len(a), len(b))
    return statistics.median(x / y for x, y in zip(a[-count:], b[-count:], strict=True))


def row(*cells: object) -> str:
    widths = (34, 9, 33, 9, 8, 8, 10)
    return "  ".join(f"{c!s:<{w}}" for c, w in zip(cells, widths, strict=False)).rstrip()


def self_peak_kib(bench: Bench, args: list[str], cwd: Path) -> int:
    """The largest of --runs peaks of patchkeeper's own process running ARGS."""
    peaks = []
    with tempfile.NamedTemporaryFile("r", suffix=".kib") as out:
        for _ in range(max(1, bench.runs)):
            command = [sys.executable, "-c", _SELF_PEAK, out.name, *args]
            subprocess.run(command, cwd=cwd, env=bench.env, capture_output=True, check=False)
            out.seek(0)
            peaks.append(int(out.read() or 0))
    return max(peaks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--tags", type=int, default=50)
    parser.add_argument("--changes", type=int, default=200)
    parser.add_argument("--seed", type=int, default=10, help="the workload generator's seed")
    parser.add_argument("--hunks", type=int, default=1, help="hunks per patch (patch size)")
    parser.add_argument("--patches", type=int, default=200, help="M")
    parser.add_argument("--variants", type=int, default=30, help="V")
    parser.add_argument("--same-tags", type=int, default=200, help="S")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--root", type=Path, help="build here and keep it (default: a temp dir)")
    parser.add_argument("--quick", action="store_true", help="2,000 files, 6 tags, 1 run")
    parser.add_argument(
        "--before", type=Path, help="an earlier patchkeeper tree: the variants rows against it"
    )
    parser.add_argument(
        "--skip", default="", help="comma list of: variants, lint, tags, many, small, json, update"
    )
    args = parser.parse_args()
    if args.quick:
        args.files, args.tags, args.changes, args.runs = 2000, 6, 40, 1
        args.patches, args.variants, args.same_tags = 50, 10, 20
    compile_bytecode()
    with tempfile.TemporaryDirectory(prefix="pk-edges-") as tmp:
        root = args.root or Path(tmp) / "upstream"
        started = time.monotonic()
        if (root / "install").is_dir():
            upstream = _existing(root, args)
        else:
            sizes = (10, args.patches, 4 * args.patches)
            upstream = build(
                root, files=args.files, tags=args.tags, changes=args.changes,
                patches=max(sizes), sizes=tuple(sorted(set(sizes))), seed=args.seed,
                hunks=args.hunks,
            )  # fmt: skip
        report(args, upstream, time.monotonic() - started)


def _existing(root: Path, args: argparse.Namespace) -> Upstream:
    """An upstream built by an earlier run with --root (its patch sets as they are)."""
    sizes = (10, args.patches, 4 * args.patches)
    upstream = Upstream(
        root, root / "origin.git", root / "install", [f"v1.{n}.0" for n in range(args.tags)],
        {m: root / f"patches-{m}" for m in sizes},
        {m: root / f"floor-{m}.list" for m in sizes},
        files=args.files, changes=args.changes,
    )  # fmt: skip
    return upstream


def report(args: argparse.Namespace, upstream: Upstream, built: float) -> None:
    bench = Bench(args.runs, upstream.root)
    pk = patchkeeper_command()
    skip = set(filter(None, args.skip.split(",")))
    install, m = upstream.install, args.patches
    newest = upstream.tags[-1]
    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout
    print(
        f"synthetic upstream: {upstream.files} files, {len(upstream.tags)} tags, about "
        f"{upstream.changes} files changed per tag (ready in {built:.1f} s); M = {m}; "
        f"{args.runs} run(s) per figure, medians; {git_version.strip()}, "
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs"
    )
    print()
    print(row("edge", "A", "against (B)", "B", "ratio", "cpu", "target"))

    def check(patches: Path, *refs: str, extra: tuple[str, ...] = ()) -> list[str]:
        chosen = [word for ref in refs for word in ("--ref", ref)]
        return [*pk, "check", "--install", str(install), "--patches", str(patches), *chosen,
                *extra]  # fmt: skip

    def line(edge: str, a: Measured, against: str, b: Measured, target: str) -> None:
        wall, cpu = paired(a.seconds, b.seconds), paired(a.cpu, b.cpu)
        print(row(edge, fmt_s(a.median), against, fmt_s(b.median), f"{wall:.2f}x",
                  f"{cpu:.2f}x", target))  # fmt: skip

    plain = upstream.patch_sets[m]
    before, after = ([], [])
    if args.before is not None:
        before = ["env", f"PYTHONPATH={args.before.resolve()}"]
        after = ["env", f"PYTHONPATH={HERE.parent.parent}"]
    if "variants" not in skip:
        variants = variant_set(upstream, m, args.variants)
        a, b = bench.pair(check(variants, newest), check(plain, newest), install, count=False)
        line(f"variants: check {m} x {args.variants}v x 1", a, f"the plain {m} x 1", b, "<= 2x")
        if before:
            mine = check(variants, newest)
            a, b = bench.pair([*before, *mine], [*after, *mine], install, count=False)
            line(f"  --before: check {m} x {args.variants}v", a, "this tree's", b, "")
    if "lint" not in skip:
        variants = variant_set(upstream, m, args.variants)
        lint = [*pk, "lint", "--patches"]
        a, b = bench.pair([*lint, str(variants)], [*lint, str(plain)], install, count=False)
        line(f"variants: lint {m} x {args.variants}v", a, f"lint of the plain {m}", b, "")
        if before:
            mine = [*lint, str(variants)]
            a, b = bench.pair([*before, *mine], [*after, *mine], install, count=False)
            line(f"  --before: lint {m} x {args.variants}v", a, "this tree's", b, "")
    if "tags" not in skip:
        same = same_tree_tags(upstream, args.same_tags)
        many = [*check(plain), "--tags", "v2.*"]
        a, b = bench.pair(many, check(plain, same[0]), install, count=False)
        line(f"no-change tags: check {m} x {len(same)}", a, f"check {m} x 1 (one of them)", b,
             "<= 2x")  # fmt: skip
    if "many" not in skip:
        big = upstream.patch_sets[4 * m]
        every = ("--tags", "v1.*")
        a, b = bench.pair(check(big, extra=every), check(plain, extra=every), install, count=False)
        line(f"many patches: check {4 * m} x {len(upstream.tags)}", a,
             f"check {m} x {len(upstream.tags)}", b, "<= 4x (linear)")  # fmt: skip
    if "small" not in skip:
        floor = ["bash", str(FLOOR), str(install), str(upstream.floor_lists[10]), newest]
        a, b = bench.pair(check(upstream.patch_sets[10], newest), floor, install, count=False)
        line("small: check 10 x 1", a, "per-patch plumbing floor (bash)", b, "<= 2x")
        bare = [sys.executable, "-c", "pass"]
        a, b = bench.pair([*pk, "--version"], bare, upstream.root, count=False)
        line("small: patchkeeper --version", a, "python3 -c pass", b, "<= 2x")
    if "json" not in skip:
        every = ["check", "--install", str(install), "--patches", str(plain), "--tags", "v1.*"]
        as_json = self_peak_kib(bench, [*every, "--format", "json"], install)
        as_text = self_peak_kib(bench, every, install)
        print(
            row(f"json: peak of check {m} x {len(upstream.tags)}", f"{as_json / 1024:.0f} MiB",
                "the text format's", f"{as_text / 1024:.0f} MiB", f"{as_json / as_text:.2f}x",
                "", "<= 1.5x")
        )  # fmt: skip
    if "update" not in skip:
        print()
        update_row(bench, upstream, pk)


if __name__ == "__main__":
    main()
