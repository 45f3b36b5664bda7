"""How much time `patchkeeper update` adds on top of the bare upstream command, on the sandbox.

Both start from the same state: the practice patches applied at 0.21.5, one edit of the
operator's own, origin at 0.22.0. "bare" runs the sandbox's `./hermes update --yes` (it
stashes the dirty tree and restores it); "patchkeeper" runs `patchkeeper update`, which runs
that same command and does everything around it (journal, set-aside, leftovers, apply,
3-way restore). Smoke checks are left out (`Smoke:` headers removed): they prove behaviour
and cost what the check costs (the practice check holds a lock for 7 s), not patchkeeper.
Each run gets a fresh copy of one sandbox; the two commands run in turn. Prints medians and
the paired difference and ratio:

    python tests/benchmarks/bench_update.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from patchkeeper.demo.sandbox import Sandbox, build_sandbox, open_copied_sandbox


def prepare(template: Sandbox, root: Path) -> Sandbox:
    shutil.copytree(template.root, root, symlinks=True)
    box = open_copied_sandbox(root)
    for patch in box.patches.rglob("*.patch"):
        lines = patch.read_text().splitlines(keepends=True)
        patch.write_text(  # a fix with no check says why (else it is not proven: exit 5)
            "".join(
                "Smoke: none (taken out: a benchmark)\n" if line.startswith("Smoke:") else line
                for line in lines
            )
        )
    env = box.hermes_env()
    subprocess.run(
        [sys.executable, "-m", "patchkeeper", "apply", "--patches", str(box.patches)],
        env=env, capture_output=True, check=True,
    )  # fmt: skip
    with (box.install / "README.md").open("a") as handle:
        handle.write("\nA note the operator keeps locally.\n")
    box.publish("v2026.10.1")
    return box


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {proc.returncode}: {proc.stdout[-400:]!r}")
    return elapsed


Command = Callable[[Sandbox], list[str]]


def paired_runs(
    runs: int, template: Sandbox, tmp: Path, commands: dict[str, Command]
) -> dict[str, list[float]]:
    """Each command once per round, in turn, each on a fresh copy: run N of one sits beside run
    N of the other, so a load spike on the shared machine falls on both."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for run in range(runs):
        for name, command in commands.items():
            root = tmp / f"{name}-{run}"
            box = prepare(template, root)
            times[name].append(timed(command(box), box.install, box.hermes_env()))
            shutil.rmtree(root)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        template = build_sandbox(tmp / "template")
        work = tmp / "work"
        work.mkdir()
        times = paired_runs(runs, template, work, {
            "bare": lambda box: ["./hermes", "update", "--yes"],
            "wrapped": lambda box: [sys.executable, "-m", "patchkeeper", "update", "--patches",
                                    str(box.patches)],
        })  # fmt: skip
        start = statistics.median(
            timed([sys.executable, "-m", "patchkeeper", "--version"], tmp, dict(os.environ))
            for _ in range(runs)
        )
    bare, wrapped = (statistics.median(times[name]) for name in ("bare", "wrapped"))
    pairs = list(zip(times["wrapped"], times["bare"], strict=True))
    added = statistics.median(w - b for w, b in pairs)
    ratio = statistics.median(w / b for w, b in pairs)
    print(
        f"sandbox v2026.9.24 -> v2026.10.1, 2 patches + 1 user edit, {runs} paired runs (medians)"
    )
    print(f"bare ./hermes update --yes            {bare * 1000:8.1f} ms")
    print(f"patchkeeper update (whole process)    {wrapped * 1000:8.1f} ms")
    print(f"  added on top of the bare command    {added * 1000:8.1f} ms (paired)")
    print(f"  of which interpreter + CLI start    {start * 1000:8.1f} ms")
    print(f"ratio patchkeeper / bare              {ratio:8.2f} (paired)")


if __name__ == "__main__":
    main()
