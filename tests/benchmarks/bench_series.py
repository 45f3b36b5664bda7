"""Real patch series: Debian's quilt series judged by patchkeeper and by quilt, side by side.

Its inputs are public source packages its user fetches; nothing of them is committed. With a
`deb-src` line for two suites (here bookworm and trixie) and `apt-get update`:

    mkdir -p /work/scratch/series && cd /work/scratch/series
    for p in xz-utils jq curl; do apt-get source --download-only $p/bookworm $p/trixie; done
    python tests/benchmarks/bench_series.py /work/scratch/series [--runs 5] [--keep DIR]

Per package: the oldest `.dsc`'s `debian/patches` is the series, as Debian ships it; every
`.orig` tarball of the package from that version on is an upstream release (a `.dsc` of
its own or not), committed in version order and tagged `v<upstream version>` in a git
repository, with `[install] version_scheme = "debian"`. Then, each the median of RUNS:

- patchkeeper: one `check --tags 'v*'` over every release (its outcome counts are printed);
- quilt push -a: per release, the tree unpacked (`git archive | tar -x`) and `quilt push -a`
  (quilt's default fuzz), which stops at the first patch that fails;
- patch, each: per release, the tree unpacked and every patch judged as quilt does it
  (`patch -p1 --fuzz=0 -N --dry-run`, then applied when that succeeds, going on past a
  failure), which is what `check` answers.

The ratios patchkeeper / quilt and patchkeeper / GNU patch are printed per package, with the
number of git processes `check` ran and how many of them were `git apply --3way` (from
GIT_TRACE, in a run of its own that is not timed), and the load average before and after.

The three (four with `--against`) are timed interleaved, one run of each in turn, so a
machine's load falls on all of them alike, each run's wall seconds and CPU seconds (user +
system of every process it started, from the children's rusage) kept; a ratio is the median of
the run-by-run ratios of one run of each (paired), in wall and in CPU. The CPU of the two loops
is their tools' only (this script's own Python between them is no part of a loop a shell runs).
`--against DIR` times the `check` of another patchkeeper checkout too (say, main's:
`--against /work/main`), with its git processes and the ratio this one / that one. Each `check`
runs the code of its checkout (this script's, or `--against`'s), put first on `PYTHONPATH`:
never a patchkeeper installed in the interpreter. `--keep DIR` builds there, and a later run
with the same `--keep` reuses what is built. Both checkouts are compiled to bytecode first
(`compileall`), so no run pays for compiling.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from patchkeeper.patchset.versions import SCHEMES

DEBIAN = SCHEMES["debian"]
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}  # fmt: skip


@dataclass(frozen=True)
class Source:
    """One version of a source package, as its .dsc names it."""

    package: str
    version: str  # Debian's: [epoch:]upstream[-revision]
    orig: Path
    debian: Path | None


_ORIG_RE = re.compile(r"^(?P<package>[^_]+)_(?P<upstream>[^_]+)\.orig\.tar\.\w+$")


def read_dsc(path: Path) -> Source | None:
    text = path.read_text(errors="replace")
    fields = dict(re.findall(r"(?m)^(Source|Version|Format): (.+)$", text))
    if "quilt" not in fields.get("Format", ""):
        return None  # native packages carry no series
    files = sorted(set(re.findall(r"(?m)^ [0-9a-f]{32,} \d+ (\S+)$", text)))
    orig = [f for f in files if _ORIG_RE.match(f)]
    debian = [f for f in files if re.search(r"\.debian\.tar\.\w+$", f)]
    if len(orig) != 1:
        return None  # several orig components: left out
    folder = path.parent
    return Source(
        fields["Source"], fields["Version"], folder / orig[0],
        folder / debian[0] if debian else None,
    )  # fmt: skip


def releases(folder: Path, package: str) -> list[tuple[str, Path]]:
    """Every upstream release of PACKAGE in FOLDER (its .orig tarballs, a .dsc or not), in
    version order."""
    found = []
    for tarball in folder.glob(f"{package}_*.orig.tar.*"):
        match = _ORIG_RE.match(tarball.name)
        if match and (version := DEBIAN.parse(match["upstream"])) is not None:
            found.append((version, match["upstream"], tarball))
    return [(upstream, tarball) for _, upstream, tarball in sorted(found)]


def run(args: list[str], cwd: Path, **kw) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(args, cwd=cwd, env={**os.environ, **GIT_ENV, **kw.pop("env", {})},
                          capture_output=True, check=kw.pop("check", True), **kw)  # fmt: skip


def unpack(tarball: Path, into: Path) -> None:
    """A tarball's content, its one top folder taken away, into INTO."""
    with tempfile.TemporaryDirectory(dir=into.parent) as tmp:
        with tarfile.open(tarball) as archive:
            archive.extractall(tmp, filter="tar")
        entries = list(Path(tmp).iterdir())
        top = entries[0] if len(entries) == 1 and entries[0].is_dir() else Path(tmp)
        for entry in top.iterdir():
            shutil.move(str(entry), into / entry.name)


def build(
    base: Source, upstreams: list[tuple[str, Path]], root: Path
) -> tuple[Path, Path, list[str]] | None:
    """The upstream repository (one tagged commit per release, from BASE's on) and BASE's
    series as the patch set."""
    if base.debian is None:
        return None
    repo, patches = root / "upstream", root / "patches"
    repo.mkdir(parents=True)
    run(["git", "init", "-q", "-b", "main"], repo)
    tags: list[str] = []
    floor = DEBIAN.parse(upstream_of(base.version))
    for upstream, tarball in upstreams:
        tag = f"v{upstream}"
        version = DEBIAN.parse(upstream)
        if "~" in tag or floor is None or version is None or version < floor:
            continue  # git takes no `~` in a tag; a release older than the series
        for entry in repo.iterdir():
            if entry.name == ".git":
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        unpack(tarball, repo)
        run(["git", "add", "-A", "-f"], repo)
        run(["git", "commit", "-q", "--allow-empty", "-m", upstream], repo)
        run(["git", "tag", tag], repo)
        tags.append(tag)
    debian = root / "debian-tar"
    debian.mkdir()
    unpack_debian(base.debian, debian)
    series = debian / "debian" / "patches"
    if not tags or not (series / "series").is_file():
        return None
    # Only what the series lists: patchkeeper refuses a patch file the series does not name
    # (a fix left out by mistake would be missing without a word); quilt passes over it.
    patches.mkdir()
    shutil.copy2(series / "series", patches / "series")
    for name in series_names(patches):
        (patches / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(series / name, patches / name)
    (patches / "patchkeeper.toml").write_text('[install]\nversion_scheme = "debian"\n')
    run(["git", "checkout", "-q", tags[0]], repo)
    return repo, patches, tags


def upstream_of(version: str) -> str:
    """Debian's [epoch:]upstream[-revision] -> upstream."""
    return re.sub(r"-[^-]+$", "", version.split(":", 1)[-1])


def unpack_debian(tarball: Path, into: Path) -> None:
    with tarfile.open(tarball) as archive:
        archive.extractall(into, filter="tar")


def series_names(patches: Path) -> list[str]:
    names = []
    for line in (patches / "series").read_text().splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if line:
            names.append(line.split()[0])
    return names


def tree_of(repo: Path, tag: str, into: Path) -> None:
    into.mkdir()
    archive = run(["git", "archive", tag], repo).stdout
    subprocess.run(["tar", "-x"], cwd=into, input=archive, check=True)


def quilt_push_all(repo: Path, patches: Path, tags: list[str], work: Path) -> None:
    for tag in tags:
        tree = work / tag
        tree_of(repo, tag, tree)
        (tree / "patches").symlink_to(patches)
        env = {"QUILT_PATCHES": "patches", "QUILT_PC": ".pc"}
        run(["quilt", "push", "-a", "-q"], tree, env=env, check=False)
        shutil.rmtree(tree)


def patch_each(repo: Path, patches: Path, tags: list[str], work: Path) -> dict[str, int]:
    """Every patch judged on every release as quilt's `patch` call does (fuzz 0), going on
    past a failure. Returns how many applied and how many failed, over all releases."""
    counts: collections.Counter[str] = collections.Counter()
    for tag in tags:
        tree = work / tag
        tree_of(repo, tag, tree)
        for name in series_names(patches):
            applies = gnu_patch(tree, patches / name, "--dry-run") == 0
            if applies:  # as quilt push: all of it or nothing (patch -f keeps the hunks that fit)
                gnu_patch(tree, patches / name)
            counts["applies" if applies else "fails"] += 1
        shutil.rmtree(tree)
    return dict(counts)


def gnu_patch(tree: Path, diff: Path, *flags: str) -> int:
    with open(diff, "rb") as stream:
        return subprocess.run(
            ["patch", "-p1", "--fuzz=0", "-N", "-s", "-f", "--no-backup-if-mismatch", "-r", "-",
             *flags], cwd=tree, stdin=stream, capture_output=True, check=False,
        ).returncode  # fmt: skip


HERE = Path(__file__).resolve().parents[2]  # the checkout this script belongs to


def check(repo: Path, patches: Path, trace: Path | None = None, code: Path | None = None) -> dict:
    """`check`'s answer, by the code of CODE (default: this script's checkout, first on
    PYTHONPATH: an installed patchkeeper of the interpreter is not what is measured)."""
    env = {"GIT_TRACE": str(trace)} if trace else {}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(code or HERE), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    proc = run(
        [sys.executable, "-m", "patchkeeper", "check", "--install", str(repo), "--patches",
         str(patches), "--tags", "v*", "--json", "--no-progress"], repo, env=env, check=False,
    )  # fmt: skip
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"error": proc.stderr.decode(errors="replace").strip()[-400:]}


def git_calls(repo: Path, patches: Path, work: Path, code: Path | None) -> tuple[dict, int, int]:
    """`check`'s answer, its git processes and its `git apply --3way` ones (GIT_TRACE)."""
    trace = work / "trace"
    trace.unlink(missing_ok=True)
    doc = check(repo, patches, trace, code)
    said = trace.read_text(errors="replace").splitlines() if trace.exists() else []
    calls = [line for line in said if "trace: built-in: git" in line]
    three_way = sum(1 for line in calls if "apply" in line and "--3way" in line)
    return doc, len(calls), three_way


@dataclass
class Timed:
    """One action's runs, in order: wall seconds and CPU seconds (its processes' user + system)."""

    wall: list[float]
    cpu: list[float]


def interleaved(actions: dict[str, Callable[[], object]], runs: int) -> dict[str, Timed]:
    """Each of ACTIONS run in turn RUNS times (the order rotating), each run timed."""
    times = {name: Timed([], []) for name in actions}
    names = list(actions)
    for number in range(runs):
        turn = names[number % len(names) :] + names[: number % len(names)]
        for name in turn:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            actions[name]()
            times[name].wall.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            times[name].cpu.append(
                after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            )
    return times


def seconds(timed: Timed) -> str:
    """The median wall and CPU seconds of TIMED's runs."""
    return f"{statistics.median(timed.wall):>5.2f} {statistics.median(timed.cpu):>5.2f}"


def paired(a: list[float], b: list[float]) -> float:
    """The median of A / B run by run (run k of each: the same minutes of the machine)."""
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def ratios(row: dict, name: str, of: str = "check") -> str:
    """OF against NAME in ROW: paired wall ratio, paired CPU ratio."""
    a, b = row[of], row[name]
    return f"{paired(a.wall, b.wall):>5.2f}x {paired(a.cpu, b.cpu):>5.2f}x"


def measure(
    package: str, built: tuple[Path, Path, list[str]], work: Path, runs: int, against: Path | None
) -> tuple[dict | None, collections.Counter[str]]:
    """One package's row (times, git processes, GNU patch's answers) and outcome counts."""
    repo, patches, tags = built
    doc, calls, three_way = git_calls(repo, patches, work, None)
    if "targets" not in doc:
        print(f"{package:<12} check failed: {doc.get('error') or doc.get('message')}")
        return None, collections.Counter()
    outcomes = collections.Counter(
        p["outcome"] for target in doc["targets"] for p in target["patches"]
    )
    counts = ", ".join(f"{n} {o}" for o, n in sorted(outcomes.items()))
    print(f"{package:<12} {len(series_names(patches)):>7} {' '.join(tags):<24} {counts}")
    row = {"package": package, "git": calls, "3way": three_way}
    if against is not None:
        other, row["other git"], _ = git_calls(repo, patches, work, against)
        if other != doc:
            print(f"{package:<12} NOTE: --against answers otherwise (its JSON differs)")
    scratch = work / "trees"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    actions: dict[str, Callable[[], object]] = {
        "check": lambda: check(repo, patches),
        "quilt": lambda: quilt_push_all(repo, patches, tags, scratch),
        "each": lambda: patch_each(repo, patches, tags, scratch),
    }
    if against is not None:
        actions["other"] = lambda: check(repo, patches, code=against)
    row.update(interleaved(actions, runs))
    row["gnu"] = patch_each(repo, patches, tags, scratch)
    return row, outcomes


def built_or_build(
    sources: list[Source], folder: Path, root: Path
) -> tuple[Path, Path, list[str]] | None:
    """The repository and series under ROOT, from an earlier --keep run when there."""
    repo, patches = root / "upstream", root / "patches"
    if (patches / "series").is_file() and (repo / ".git").is_dir():
        tags = run(["git", "tag", "--list", "v*"], repo).stdout.decode().split()
        return repo, patches, sorted(tags, key=lambda t: DEBIAN.parse(t[1:]) or DEBIAN.parse("0"))
    return build(sources[0], releases(folder, sources[0].package), root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="where `apt-get source --download-only` ran")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="build here and keep it (default: a temp dir)")
    parser.add_argument("--against", type=Path, help="another patchkeeper checkout to time too")
    parser.add_argument("--only", action="append", help="this package only (again: and this)")
    options = parser.parse_args()
    if shutil.which("quilt") is None:
        sys.exit("quilt is not installed (apt-get install quilt)")
    by_package: dict[str, list[Source]] = collections.defaultdict(list)
    for dsc in sorted(options.folder.glob("*.dsc")):
        if (source := read_dsc(dsc)) is not None:
            by_package[source.package].append(source)
    # Bytecode first: with PYTHONDONTWRITEBYTECODE set, every run would compile the code anew.
    for checkout in (HERE, options.against):
        if checkout is not None:
            run([sys.executable, "-m", "compileall", "-q", str(checkout / "patchkeeper")], checkout)
    work = options.keep or Path(tempfile.mkdtemp(prefix="bench-series-"))
    totals: collections.Counter[str] = collections.Counter()
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min) at start")
    print(f"{'package':<12} {'patches':>7} {'releases':<24} outcomes (all releases)")
    rows = []
    for package, sources in sorted(by_package.items()):
        if options.only and package not in options.only:
            continue
        sources.sort(key=lambda s: DEBIAN.parse(s.version) or DEBIAN.parse("0"))
        built = built_or_build(sources, options.folder, work / package)
        if built is None:
            print(f"{package:<12} no quilt series: left out")
            continue
        row, outcomes = measure(package, built, work / package, options.runs, options.against)
        if row is not None:
            rows.append(row)
            totals.update(outcomes)
    print()
    print(f"{options.runs} interleaved runs: medians in seconds (wall, cpu); ratios are check's,")
    print("the median of the run-by-run ratios (wall, cpu)")
    other = f" {'against':>11} {'ratio':>13}" if options.against else ""
    print(f"{'package':<12} {'check':>11} {'push -a':>11} {'ratio':>13} {'patch each':>11} "
          f"{'ratio':>13} {'git':>4} {'3way':>4}{other}  GNU patch fuzz 0")  # fmt: skip
    for row in rows:
        tail = f" {seconds(row['other'])} {ratios(row, 'other')}" if options.against else ""
        print(f"{row['package']:<12} {seconds(row['check'])} {seconds(row['quilt'])} "
              f"{ratios(row, 'quilt')} {seconds(row['each'])} {ratios(row, 'each')} "
              f"{row['git']:>4} {row['3way']:>4}{tail}  {row['gnu']}")  # fmt: skip
    if rows:
        print("outcomes, all packages:", dict(sorted(totals.items())))
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min) at end")
    if options.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
