"""Phase 4: run the upstream's updater in its own process group, its output streamed and kept in
the run's folder, its pid and start time in the journal while it runs (`recover` tells a live
updater from a dead one by them)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from patchkeeper.install.processes.process_groups import run_in_group
from patchkeeper.install.records import update_journal as jr
from patchkeeper.update.context import RunContext
from patchkeeper.update.report import CommandResult

TAIL_LINES = 20
UPSTREAM_LOG = "upstream.log"  # in the run's folder: the updater's output, whoever reads it


def upstream(ctx: RunContext) -> str:
    """Phase 4: the updater ([update] command plus the ARGS after `--`), its result in the
    journal."""
    command = [*ctx.ws.settings.update_command, *ctx.options.args]
    timeout = ctx.timeout
    ctx.say(f"running {' '.join(command)} (in {ctx.install.path}, timeout {timeout:g}s)")

    def started(pid: int) -> None:
        """Record the updater, held behind its gate: it can move HEAD only once `recover`
        can find it (a kill before this leaves it held, and it ends without running)."""
        from patchkeeper.install.system.liveness import process_start_time

        jr.checkpoint("4.0.1")  # tests: started, held, not recorded
        # The leader's start time: `recover` judges "still running" by this very process,
        # not by whatever else (a daemon it left, a reused pgid) is in the group.
        ctx.journal.upstream_pgid = pid
        ctx.journal.upstream_start_time = process_start_time(pid)
        # The file is synced, the folder is not: these facts tell a live updater from a
        # dead one after a crash of ours; after a power cut no process of before is left.
        jr.save(ctx.state_dir, ctx.journal, then_sync_folder=False)
        jr.checkpoint("4.0.2")  # tests: recorded, still held

    # Said before it starts: a crash before `started` has recorded the pid must not read as
    # "the upstream command never ran" (recover then rolls back as if it may have run).
    ctx.journal.extra["upstream_starting"] = True
    jr.save(ctx.state_dir, ctx.journal)
    run_dir = ctx.journal.run_dir(ctx.state_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    log = run_dir / UPSTREAM_LOG
    result = run_streamed(command, ctx.install.path, timeout, ctx.sink, started, log)
    jr.checkpoint("4.1")
    ctx.report.upstream = result
    ctx.journal.upstream_exit = result.exit_status
    ctx.journal.upstream_ok = result.ok
    ctx.journal.extra["upstream_said"] = result.describe()
    # Phase 5's record, next and with nothing done in between, syncs the folder.
    jr.save(ctx.state_dir, ctx.journal, then_sync_folder=False)
    return result.describe()


def run_streamed(
    command: list[str],
    cwd: Path,
    timeout: float,
    sink: BinaryIO,
    on_start: Callable[[int], None] | None = None,
    log: Path | None = None,
) -> CommandResult:
    """Run COMMAND in its own process group, its output streamed to SINK as it comes (through
    the file LOG when given, so the command never writes into a pipe that died with us)."""
    tail: deque[str] = deque(maxlen=TAIL_LINES)

    def line(raw: bytes) -> None:
        sink.write(raw)
        sink.flush()
        tail.append(raw.decode(errors="replace").rstrip("\n"))

    finished = run_in_group(
        command,
        cwd,
        timeout=timeout,
        on_stdout=line,
        on_start=on_start,
        held=on_start is not None,
        log=log,
    )
    return CommandResult(
        list(command),
        exit_status=finished.exit_status,
        timed_out=finished.timed_out,
        error=finished.start_error,
        seconds=finished.seconds,
        tail=list(tail),
    )
