"""Issue 30's targets, each as a paired ratio against its floor, in one run:

    python tests/benchmarks/bench_issue30.py               # the full run (7 to 10 minutes)
    python tests/benchmarks/bench_issue30.py --quick       # small trees, 3 runs (a minute or two)

Rows (A against B; the issue's target in brackets):

- check 10 x 1 (10 patches, the newest tag) against the per-patch plumbing floor (floor.sh)
  [<= 1.5x] and against the one-apply-per-tag floor (floor_one.sh) [<= 3x], on the big tree
  (--files, 20,000) and on a small one (--small-files, 300); under each, a yardstick with no
  target: the same floor's git processes started from Python (floor_python.py, this
  interpreter), the share of the floor that no Python program can go below;
- `patchkeeper --version` against `python -c pass` of the same interpreter [<= 1.3x], through
  the console script and through `python -m patchkeeper`, in the venv this runs in (whose
  patchkeeper may be an editable install: its finder runs at start-up in B too) and in a
  temporary venv with patchkeeper installed from --code as a wheel installs it; under each
  venv's rows, a yardstick with no target: `python -m` of an empty module (what -m costs);
- update (10 patches, no smoke check) against the bare updater it runs (`git pull --ff-only`),
  from the same state, at --files and at --big-files (100,000) with the same change: the
  paired difference [<= +300 ms], and how much that difference grows with the tree [no more
  than the bare updater's own growth: both must scan the tree once, nothing more];
- check of M patches (--patches, 200) over S tags whose trees are all the newest's
  (--same-tags, 200) against the same M on one of them [<= 1.2x];
- check of M patches with V variants each (--variants, 30; `Applies-To` picks one) on the
  newest tag against the plain M [<= 1.2x].

Columns: "A" and "B" are medians of wall time; "wall" and "cpu" the medians of the pair-by-pair
ratios (A and B run in turn, A B A B ...; cpu is user + system of every process of a run), or
for update the medians of the pair-by-pair differences; "git" the git processes of one run of
A and of B. "verdict" is PASS when both wall and cpu meet the target, MISS when neither, and
names the one that misses otherwise. The code measured is --code's (default: this checkout),
put first on PYTHONPATH for A and B alike. `--series FOLDER` also runs bench_series.py on the
Debian sources there. Run by hand, not in CI.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
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
    update_pair,
)
from tests.benchmarks.synthetic import Upstream, build, same_tree_tags, variant_set  # noqa: E402

FLOOR_ONE = HERE / "floor_one.sh"
FLOOR_PYTHON = HERE / "floor_python.py"
WIDTHS = (32, 8, 38, 8, 9, 9, 9, 20, 11)


def row(*cells: object) -> str:
    return "  ".join(f"{c!s:<{w}}" for c, w in zip(cells, WIDTHS, strict=False)).rstrip()


def paired(a: list[float], b: list[float], how: Callable[[float, float], float]) -> float:
    """The median of HOW(a, b) pair by pair (paired from the last: a slow warm-up counts)."""
    count = min(len(a), len(b))
    return statistics.median(how(x, y) for x, y in zip(a[-count:], b[-count:], strict=True))


def verdict(wall_ok: bool, cpu_ok: bool) -> str:
    if wall_ok and cpu_ok:
        return "PASS"
    if not (wall_ok or cpu_ok):
        return "MISS"
    return "MISS (wall)" if cpu_ok else "MISS (cpu)"


def git_counts(a: Measured, b: Measured) -> str:
    return "" if a.git is None else f"{a.git} / {b.git}"


def ratio_row(name: str, a: Measured, against: str, b: Measured, limit: float | None) -> None:
    """One row; with no LIMIT it is a yardstick, not a target, and has no verdict."""
    wall = paired(a.seconds, b.seconds, lambda x, y: x / y)
    cpu = paired(a.cpu, b.cpu, lambda x, y: x / y)
    judged = ("(yardstick)", "") if limit is None else (
        f"<= {limit}x", verdict(wall <= limit, cpu <= limit))
    print(row(name, fmt_s(a.median), against, fmt_s(b.median), f"{wall:.2f}x", f"{cpu:.2f}x",
              git_counts(a, b), *judged))  # fmt: skip


def ms(seconds: float) -> str:
    return f"{seconds * 1000:+.0f} ms"


def overheads(a: Measured, b: Measured) -> tuple[float, float]:
    """A's paired wall and CPU seconds over B."""
    return (paired(a.seconds, b.seconds, lambda x, y: x - y),
            paired(a.cpu, b.cpu, lambda x, y: x - y))  # fmt: skip


def wheel_venv(code: Path, root: Path) -> Path:
    """A venv with patchkeeper installed from CODE as a wheel installs it (not editable), its
    dependencies found through a path line to this interpreter's site-packages (a path line
    runs none of the `.pth` imports there, an editable finder's included). Returns its python.
    Built anew each run: a kept one would be an older CODE."""
    source, venv = root / "wheel-source", root / "wheel-venv"
    for old in (source, venv):
        shutil.rmtree(old, ignore_errors=True)
    shutil.copytree(code, source, ignore=shutil.ignore_patterns(
        ".git", "__pycache__", "*.egg-info", "build", "dist"))  # fmt: skip
    base = Path(sys.base_prefix) / "bin" / "python3"
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = subprocess.run([str(python), "-c", where], capture_output=True, text=True,
                          check=True)  # fmt: skip
    Path(site.stdout.strip(), "bench-deps.pth").write_text(sysconfig.get_paths()["purelib"])
    env = {**os.environ, "SETUPTOOLS_SCM_PRETEND_VERSION": "0.0.0+bench"}
    env.pop("PYTHONPATH", None)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--no-index", "--disable-pip-version-check", str(source)],
        check=True, capture_output=True, env=env,
    )  # fmt: skip
    subprocess.run([str(python), "-m", "compileall", "-q", site.stdout.strip()], check=True,
                   capture_output=True)  # fmt: skip
    return venv / "bin" / "python"


def build_all(args: argparse.Namespace, root: Path) -> dict[str, Upstream]:
    """The big tree (every row), the small one (check 10 x 1), the huge one (update): built
    under ROOT, or taken as an earlier run with --root left them."""
    shape = {"tags": args.tags, "seed": args.seed, "hunks": args.hunks}
    m = args.patches
    # A release's upstream changes hit about changes/50 patched files, spread over every patch
    # generated: 4M of them (as bench_edges builds; the figures are from there), so the
    # first M meet conflicts and 3-way merges as often in every tree, not four times as often.
    many, few = 4 * m, min(4 * m, args.small_files * 2 // 3)
    plan = {
        "big": dict(files=args.files, changes=args.changes, patches=many, sizes=(10, m, many)),
        "small": dict(files=args.small_files, changes=min(args.changes, args.small_files // 10),
                      patches=few, sizes=(10, few)),
        "huge": dict(files=args.big_files, changes=args.changes, patches=many, sizes=(many,)),
    }  # fmt: skip
    built = {}
    for name, sizes in plan.items():
        where = root / name
        if not (where / "install").is_dir():
            shutil.rmtree(where, ignore_errors=True)
            built[name] = build(where, **sizes, **shape)  # type: ignore[arg-type]
        else:
            tags = [f"v1.{n}.0" for n in range(args.tags)]
            built[name] = Upstream(
                where, where / "origin.git", where / "install", tags,
                {s: where / f"patches-{s}" for s in sizes["sizes"]},  # type: ignore[attr-defined]
                {s: where / f"floor-{s}.list" for s in sizes["sizes"]},  # type: ignore[attr-defined]
                files=sizes["files"], changes=sizes["changes"],  # type: ignore[arg-type]
            )  # fmt: skip
    return built


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20_000, help="the big tree")
    parser.add_argument("--small-files", type=int, default=300, help="the small tree")
    parser.add_argument("--big-files", type=int, default=100_000, help="update's second tree")
    parser.add_argument("--tags", type=int, default=50)
    parser.add_argument("--changes", type=int, default=200, help="files changed per tag")
    parser.add_argument("--seed", type=int, default=10, help="the workload generator's seed")
    parser.add_argument("--hunks", type=int, default=1, help="hunks per patch (patch size)")
    parser.add_argument("--patches", type=int, default=200, help="M")
    parser.add_argument("--variants", type=int, default=30, help="V")
    parser.add_argument("--same-tags", type=int, default=200, help="S")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--code", type=Path, default=HERE.parent.parent,
                        help="the patchkeeper checkout to measure (default: this one)")  # fmt: skip
    parser.add_argument("--root", type=Path, help="build here and keep it (default: a temp dir)")
    parser.add_argument("--quick", action="store_true", help="small trees, 3 runs")
    parser.add_argument("--series", type=Path, help="also run bench_series.py on this folder")
    parser.add_argument("--skip", default="", help="comma list of: small, version, wheel, "
                        "tags, variants, update")  # fmt: skip
    args = parser.parse_args()
    if args.quick:
        args.files, args.big_files, args.tags, args.changes, args.runs = 2000, 10_000, 6, 40, 3
        args.patches, args.variants, args.same_tags = 50, 10, 20
    args.code = args.code.resolve()
    compile_bytecode(args.code)
    with tempfile.TemporaryDirectory(prefix="pk-issue30-") as tmp:
        root = (args.root or Path(tmp)).resolve()
        root.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        upstreams = build_all(args, root)
        report(args, root, upstreams, time.monotonic() - started)
    if args.series:
        print(flush=True)
        series = [sys.executable, str(HERE / "bench_series.py"), str(args.series)]
        env = {**os.environ, "PYTHONPATH": str(args.code)}
        subprocess.run([*series, "--runs", str(min(args.runs, 5))], check=False, env=env)


def code_label(code: Path) -> str:
    head = subprocess.run(["git", "-C", str(code), "describe", "--always", "--dirty"],
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    return f"{code} at {head or 'an unknown commit'}"


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def report(args: argparse.Namespace, root: Path, up: dict[str, Upstream], built: float) -> None:
    bench = Bench(args.runs, root)
    bench.env["PYTHONPATH"] = str(args.code)
    skip = set(filter(None, args.skip.split(",")))
    pk = patchkeeper_command()
    big, small, huge = up["big"], up["small"], up["huge"]
    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout
    print(f"code: {code_label(args.code)}; trees of {big.files:,}, {small.files:,} and "
          f"{huge.files:,} files, {args.tags} tags, about {args.changes} files changed per tag, "
          f"seed {args.seed}, {args.hunks} hunk(s) per patch (ready in {built:.0f} s); "
          f"{args.runs} runs per figure; {git_version.strip()}, Python "
          f"{sys.version.split()[0]}, {os.cpu_count()} CPUs; load average {load()}")  # fmt: skip
    print()
    print(row("row", "A", "against (B)", "B", "wall", "cpu", "git A / B", "target", "verdict"))
    started = time.monotonic()

    def check(upstream: Upstream, patches: Path, *refs: str, extra: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
        chosen = [word for ref in refs for word in ("--ref", ref)]
        return [*pk, "check", "--install", str(upstream.install), "--patches", str(patches),
                *chosen, *extra]  # fmt: skip

    if "small" not in skip:
        for upstream in (big, small):
            newest, ten = upstream.tags[-1], upstream.patch_sets[10]
            listing = str(upstream.floor_lists[10])
            floors = ((FLOOR, "per-patch floor (floor.sh)", 1.5, ()),
                      (FLOOR_ONE, "one apply per tag (floor_one.sh)", 3, ("--one",)))  # fmt: skip
            for script, label, limit, mode in floors:
                floor = ["bash", str(script), str(upstream.install), listing, newest]
                a, b = bench.pair(check(upstream, ten, newest), floor, upstream.install)
                ratio_row(f"check 10 x 1, {upstream.files:,} files", a, label, b, limit)
                # The same git processes from Python: the share no Python tool goes below.
                in_python = [sys.executable, str(FLOOR_PYTHON), *mode, str(upstream.install),
                             listing, newest]  # fmt: skip
                a, b = bench.pair(in_python, floor, upstream.install)
                ratio_row("  that floor in Python", a, label, b, None)
    if "version" not in skip:
        pythons = [("this venv", Path(sys.executable))]
        if "wheel" not in skip:
            try:
                pythons.append(("wheel venv", wheel_venv(args.code, root / "wheel")))
            except subprocess.CalledProcessError as error:
                print(f"(no wheel venv: {error.cmd[:3]} failed: {error.stderr or error})")
        with_code = bench.env
        for where, python in pythons:
            script = python.parent / "patchkeeper"
            ways = [("script", [str(script)])] if script.exists() else []
            ways.append(("-m", [str(python), "-m", "patchkeeper"]))
            # The wheel venv's patchkeeper is the installed one, not PYTHONPATH's.
            bench.env = {k: v for k, v in with_code.items() if where == "this venv" or
                         k != "PYTHONPATH"}  # fmt: skip
            for way, command in ways:
                a, b = bench.pair([*command, "--version"], [str(python), "-c", "pass"], root)
                ratio_row(f"--version, {way}, {where}", a, "python -c pass, same python", b, 1.3)
            # What `python -m` itself costs (runpy and the module search), whatever the module.
            (root / "pk_empty_module.py").touch()
            a, b = bench.pair([str(python), "-m", "pk_empty_module"], [str(python), "-c", "pass"],
                              root)  # fmt: skip
            ratio_row("  -m of an empty module", a, "python -c pass, same python", b, None)
        bench.env = with_code
    m = args.patches
    plain, newest = big.patch_sets[m], big.tags[-1]
    if "tags" not in skip:
        same = same_tree_tags(big, args.same_tags)
        a, b = bench.pair([*check(big, plain), "--tags", "v2.*"], check(big, plain, same[0]),
                          big.install)  # fmt: skip
        ratio_row(f"check {m} x {len(same)} no-change tags", a, f"check {m} x 1 (one of them)",
                  b, 1.2)  # fmt: skip
    if "variants" not in skip:
        variants = variant_set(big, m, args.variants)
        a, b = bench.pair(check(big, variants, newest), check(big, plain, newest), big.install)
        ratio_row(f"check {m} x {args.variants} variants x 1", a, f"the plain {m} x 1", b, 1.2)
    if "update" not in skip:
        growth = []
        for upstream in (big, huge):
            a, b, count = update_pair(bench, upstream, pk)
            wall, cpu = overheads(a, b)
            growth.append((wall, cpu, b))
            codes = ",".join(map(str, sorted(a.codes)))
            print(row(f"update {count} patches, {upstream.files:,} files", fmt_s(a.median),
                      f"bare updater (git pull) [exit {codes}]", fmt_s(b.median), ms(wall),
                      ms(cpu), git_counts(a, b), "<= +300 ms",
                      verdict(wall <= 0.3, cpu <= 0.3)))  # fmt: skip
        (wall1, cpu1, b1), (wall2, cpu2, b2) = growth
        # The limit: what the bare updater itself grows by (one scan of the tree); never below 0.
        bare_wall = max(b2.median - b1.median, 0.0)
        bare_cpu = max(statistics.median(b2.cpu) - statistics.median(b1.cpu), 0.0)
        wall, cpu = wall2 - wall1, cpu2 - cpu1
        print(row(f"update's growth, x{huge.files / big.files:.0f} files", "",
                  "the bare updater's own growth", "", ms(wall), ms(cpu), "",
                  f"<= {ms(bare_wall)} / {ms(bare_cpu)}",
                  verdict(wall <= bare_wall, cpu <= bare_cpu)))  # fmt: skip
    print()
    print(f"measured in {time.monotonic() - started:.0f} s; load average {load()}")


if __name__ == "__main__":
    main()
