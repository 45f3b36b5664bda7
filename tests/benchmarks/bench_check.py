"""How long `patchkeeper check` takes for the practice patch set against all four sandbox tags,
next to the same git plumbing typed by hand (one scratch index per tag and patch, forward
check only). Prints medians over several runs and their ratio; run it by hand:

    python tests/benchmarks/bench_check.py [--runs 15]
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

from patchkeeper.demo.sandbox import TAGS, build_sandbox
from patchkeeper.patchset.load import load_patch_set


def plumbing_by_hand(install: Path, patches: Path, index: Path) -> None:
    """The minimum a person would type: per tag and patch, load its paths, check it applies."""
    patch_set = load_patch_set(patches)
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    for tag in TAGS:
        for patch in patch_set.patches:
            variant = patch.variants[0]
            listing = subprocess.run(
                ["git", "ls-tree", "-r", tag, "--", *variant.files],
                cwd=install, capture_output=True, check=True,
            ).stdout  # fmt: skip
            subprocess.run(["git", "read-tree", "--empty"], cwd=install, env=env, check=True)
            subprocess.run(
                ["git", "update-index", "--index-info"], cwd=install, env=env, input=listing,
                check=True,
            )  # fmt: skip
            subprocess.run(
                ["git", "apply", "--cached", "--check", str(variant.path)],
                cwd=install, env=env, capture_output=True, check=False,
            )  # fmt: skip


def median_seconds(action, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        sandbox = build_sandbox(Path(tmp) / "sandbox")
        sandbox.fetch_tags()
        refs = [arg for tag in TAGS for arg in ("--ref", tag)]
        cli = [sys.executable, "-m", "patchkeeper", "check", "--install", str(sandbox.install),
               "--patches", str(sandbox.patches), *refs]  # fmt: skip

        def run_cli() -> None:
            subprocess.run(cli, capture_output=True, check=False)

        def by_hand() -> None:
            plumbing_by_hand(sandbox.install, sandbox.patches, Path(tmp) / "index")

        startup = median_seconds(
            lambda: subprocess.run([sys.executable, "-m", "patchkeeper", "--version"],
                                   capture_output=True, check=True), runs)  # fmt: skip
        check = median_seconds(run_cli, runs)
        hand = median_seconds(by_hand, runs)
        patches = len(load_patch_set(sandbox.patches).patches)
    print(f"patch set: {patches} patches x {len(TAGS)} tags, {runs} runs each (medians)")
    print(f"patchkeeper check (whole CLI process) {check * 1000:8.1f} ms")
    print(f"  of which interpreter + CLI start    {startup * 1000:8.1f} ms")
    print(f"git plumbing by hand (forward only)   {hand * 1000:8.1f} ms")
    print(f"ratio check / by hand                 {check / hand:8.2f}")
    print(f"ratio (check - start) / by hand       {(check - startup) / hand:8.2f}")


if __name__ == "__main__":
    main()
