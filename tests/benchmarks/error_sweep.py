"""The machine's refusals at each write and rename of `update` and `apply` (and of every process
they start): is anything lost, left half-written or misreported? Prints the counts.

The fixture is kill_sweep's (an upstream with two releases, an install with two patches and
the operator's own edits). For a group of calls (writes: write, pwrite64, writev; renames:
rename, renameat, renameat2), an errno (ENOSPC, EDQUOT, EIO, EROFS, EACCES, EPERM) and an N,
the command runs under `strace -f -e inject=CALLS:error=ERRNO:when=N`: the Nth call of one of
CALLS in each process fails with ERRNO, patchkeeper's own and git's and the updater's alike.
Then, before anything else runs:

- the exit code is never 1 and nothing prints a traceback;
- exit 7 comes with one error line that names a path and the cause (the errno's words, or
  git's words for a refused write, or "its output was lost" for a git answer that never came;
  on stdout when stderr itself was refused);
- no temporary file is left (`.patchkeeper-*` in the work tree, `*.tmp` in the state);

then `recover` and `status` run plainly and kill_sweep's `check` judges the install: nothing
lost or torn, no false 0, no exit 1.

Exits other than 7 are the run's own: 0 when the failed call was one the run can do without
(its report on a full stdout, an optional cache), 5 when the refusal hit the updater, so the
update did not happen (rolled back, said so).

    python tests/benchmarks/error_sweep.py [--command update|apply] [--every K]
"""

from __future__ import annotations

import argparse
import errno
import os
import re
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))  # run as a script too
from patchkeeper.model.errors import GIT_WRITE_WORDS
from tests.benchmarks.kill_sweep import Fixture, Verdict, build, check, copy, pk

ERRNOS = ("ENOSPC", "EDQUOT", "EIO", "EROFS", "EACCES", "EPERM")
CALLS = {"write": "write,pwrite64,writev", "rename": "rename,renameat,renameat2"}
TRACED = ",".join(CALLS.values())

# A refusal whose errno never reaches patchkeeper: git's own words for it, or a git answer
# that never arrived (its write refused, its exit 0).
CAUSE_UNSAID = (*GIT_WRITE_WORDS, "output was lost")
ERROR_LINE = re.compile(r"patchkeeper: (internal )?error")

Point = tuple[str, str, int]  # (group of calls, errno, N)


@dataclass
class Outcome:
    """One injected refusal: the command's exit and lines, and the verdict on the install."""

    point: Point
    exit_code: int
    verdict: Verdict

    @property
    def right(self) -> bool:
        return self.verdict.recovered


def most_calls(template: Fixture, command: str, work: Path) -> dict[str, int]:
    """Per group, the most calls of one of its syscalls in one process over a clean run."""
    fixture = copy(template, work / "count")
    log = work / "count.log"
    pk(fixture.install, fixture.patches, command,
       prefix=("strace", "-f", "-o", str(log), "-e", f"trace={TRACED}"))  # fmt: skip
    counts: Counter[tuple[str, str]] = Counter()
    for line in log.read_text().splitlines():
        if match := re.match(r"(\d+)\s+(\w+)\(", line):
            counts[match.groups()] += 1
    shutil.rmtree(fixture.root)
    log.unlink()
    return {
        group: max((n for (_, call), n in counts.items() if call in calls.split(",")), default=0)
        for group, calls in CALLS.items()
    }


def _stray(fixture: Fixture) -> list[Path]:
    state = fixture.install / ".git" / "patchkeeper"
    return [*fixture.install.rglob(".patchkeeper-*"), *state.rglob("*.tmp")]


def error_point(template: Fixture, command: str, point: Point, work: Path) -> Outcome:
    group, name, n = point
    fixture = copy(template, work / f"{command}-{group}-{name}-{n}")
    inject = f"inject={CALLS[group]}:error={name}:when={n}"
    prefix = ("strace", "-f", "-o", "/dev/null", "-e", f"trace={CALLS[group]}", "-e", inject)
    proc = pk(fixture.install, fixture.patches, command, prefix=prefix)
    verdict = Verdict(killed=proc.returncode != 0)
    said = proc.stdout + proc.stderr
    if proc.returncode == 1 or "Traceback" in said:
        verdict.wrong_exit.append(f"exit {proc.returncode}: {said[-400:]}")
    if proc.returncode == 7:
        errors = [line for line in proc.stderr.splitlines() if ERROR_LINE.match(line)]
        if not errors and "note: stderr:" in proc.stdout:  # stderr refused: said on stdout
            errors = [line for line in proc.stdout.splitlines() if ERROR_LINE.match(line)]
        cause = os.strerror(getattr(errno, name))
        if len(errors) != 1 or "/" not in errors[0]:
            verdict.wrong_exit.append(f"exit 7 without one line naming a path: {errors}")
        elif cause not in errors[0] and not any(w in errors[0] for w in CAUSE_UNSAID):
            verdict.wrong_exit.append(f"exit 7 without the cause ({cause}): {errors[0]}")
    verdict.lost += [f"half-written {path.relative_to(fixture.root)}" for path in _stray(fixture)]
    after = check(fixture)
    after.killed = verdict.killed
    after.lost[:0], after.wrong_exit[:0] = verdict.lost, verdict.wrong_exit
    shutil.rmtree(fixture.root)
    return Outcome(point, proc.returncode, after)


def spread(most: dict[str, int], every: int = 1) -> dict[str, list[Point]]:
    """Every errno at every EVERY-th N of each group (the full sweep)."""
    return {
        group: [(group, name, n) for n in range(1, top + 1, every) for name in ERRNOS]
        for group, top in most.items()
    }


def sampled(most: dict[str, int], per_group: int) -> dict[str, list[Point]]:
    """PER_GROUP points of each group, spread over 1..most, the errnos taken in turn: every
    errno meets every group, at different Ns."""
    chosen = {}
    for offset, (group, top) in enumerate(most.items()):
        step = max(1, top // per_group)
        ns = range(1 + offset % step, top + 1, step)
        chosen[group] = [(group, ERRNOS[(k + offset) % len(ERRNOS)], n) for k, n in enumerate(ns)][
            :per_group
        ]
    return chosen


def sweep(
    command: str, work: Path, choose: Callable[[dict[str, int]], dict[str, Iterable[Point]]]
) -> tuple[dict[str, int], list[Outcome]]:
    template = build(work / "template", command)
    most = most_calls(template, command, work)
    points = [point for group in choose(most).values() for point in group]
    return most, [error_point(template, command, point, work) for point in points]


def summary(command: str, most: dict[str, int], outcomes: list[Outcome]) -> str:
    codes = Counter(o.exit_code for o in outcomes)
    wrong = [o for o in outcomes if not o.right]
    ranges = ", ".join(f"{group} 1..{n}" for group, n in most.items())
    errnos = Counter(o.point[1] for o in outcomes)
    return (
        f"{command}: N over {ranges}: {len(outcomes)} runs, errnos {dict(errnos)}, exits "
        f"{dict(sorted(codes.items()))}: {len(outcomes) - len(wrong)} right, {len(wrong)} wrong"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--command", choices=("update", "apply"), action="append")
    parser.add_argument("--every", type=int, default=1, help="take every Kth N only")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each failure")
    args = parser.parse_args()
    if shutil.which("strace") is None:
        raise SystemExit("strace is not installed")
    with tempfile.TemporaryDirectory(prefix="pk-errors-") as tmp:
        for command in args.command or ("update", "apply"):
            work = Path(tmp) / command
            work.mkdir()
            most, outcomes = sweep(command, work, lambda most: spread(most, args.every))
            print(summary(command, most, outcomes), flush=True)
            if args.verbose:
                for outcome in outcomes:
                    if not outcome.right:
                        v = outcome.verdict
                        print(f"  {outcome.point}: {[*v.lost, *v.torn, *v.wrong_exit]}")


if __name__ == "__main__":
    main()
