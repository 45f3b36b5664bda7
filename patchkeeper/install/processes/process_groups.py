"""External commands in a process group of their own, with a time limit that ends the group.

The upstream updater and the smoke checks start helpers of their own (git, workers, lock
holders). Killing only the direct child would leave those holding locks and pipes, so each
command gets its own session and the whole group is what gets signalled.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from patchkeeper.install.records.update_journal import checkpoint
from patchkeeper.install.system.durable import atomic_write
from patchkeeper.model.errors import PatchkeeperError, environment_problem, is_environment_error

KILL_GRACE_SECONDS = 3.0  # between SIGTERM and SIGKILL
PIPE_GRACE_SECONDS = 2.0  # a helper that escaped the group may hold a pipe: do not wait on it

LineSink = Callable[[bytes], None]


@dataclass(frozen=True)
class Finished:
    """How a command run in its own process group ended."""

    exit_status: int | None  # None: could not start; negative: killed by that signal
    timed_out: bool = False
    seconds: float = 0.0
    start_error: str = ""


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _pump(stream: IO[bytes], sink: LineSink) -> None:
    for line in iter(stream.readline, b""):
        sink(line)


TAIL_POLL_SECONDS = 0.02


def _tail(path: Path, sink: LineSink, exited: threading.Event) -> None:
    """Hand each line written to PATH to SINK, until the command has exited and all it wrote
    before that is read."""
    pending = b""
    with path.open("rb") as handle:
        while True:
            finished = exited.is_set()  # read before the last read: nothing is missed
            chunk = handle.read(65536)
            if chunk:
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    sink(line + b"\n")
                continue
            if finished:
                if pending:
                    sink(pending)
                return
            exited.wait(TAIL_POLL_SECONDS)  # woken at once when the command exits


# The gate a held command waits behind: one line on its stdin (a pipe), then the command
# itself in the same process (its pid and start time stay the ones recorded), stdin from
# /dev/null. End of file instead (the process that holds the gate died): it never runs.
_GATE = 'read -r go || exit 125; exec "$@" </dev/null'
_SHELL = "/bin/sh"


def _cannot_start(program: str, cwd: Path, env: Mapping[str, str] | None) -> str | None:
    """Why PROGRAM cannot be started from CWD (as exec would say), or None: asked before
    the gate's shell starts, which would only say so in its output."""
    if os.sep in program:
        path = cwd / program
        if path.is_file() and os.access(path, os.X_OK):
            return None
        return os.strerror(errno.EACCES if path.exists() else errno.ENOENT)
    if shutil.which(program, path=(env or os.environ).get("PATH", os.defpath)) is None:
        return os.strerror(errno.ENOENT)
    return None


def run_in_group(
    argv: Sequence[str],
    cwd: Path,
    *,
    timeout: float,
    on_stdout: LineSink,
    on_stderr: LineSink | None = None,
    env: Mapping[str, str] | None = None,
    on_start: Callable[[int], None] | None = None,
    held: bool = False,
    end_group: bool = False,
    log: Path | None = None,
) -> Finished:
    """Run ARGV in its own process group, each output line handed to a sink as it comes.

    Without ON_STDERR, stderr is merged into stdout. Past TIMEOUT the group gets SIGTERM, then
    SIGKILL after a grace. With END_GROUP the group is killed once the leader exits, so no
    helper outlives the command whatever happened.

    With HELD, the command is started held behind a pipe (a shell reading one line, then
    exec'ing it) and ON_START runs before it is let go: what ON_START records about it (its pid
    in a journal) is on disk before the command can change anything, and if this process dies
    before letting it go, the pipe's end of file stops it from ever running.

    With LOG (stdout and stderr merged), the command writes to that file, which is read back
    as it grows: if this process dies, a command that outlives it (an updater half-way through
    a checkout) writes on into a file, never into a pipe nobody reads, which would kill it.
    """
    started = time.monotonic()
    gate: tuple[int, int] | None = None
    if held:
        if (why := _cannot_start(argv[0], cwd, env)) is not None:
            return Finished(None, start_error=f"could not start {argv[0]}: {why}")
        gate = os.pipe()
        argv = [_SHELL, "-c", _GATE, "patchkeeper-held", *argv]
    output: IO[bytes] | int = subprocess.PIPE
    if log is not None:
        output = log.open("wb")
    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=subprocess.DEVNULL if gate is None else gate[0],
            stdout=output,
            stderr=subprocess.STDOUT if on_stderr is None or log else subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return Finished(None, start_error=f"could not start {argv[0]}: {exc.strerror or exc}")
    finally:
        if log is not None:
            output.close()  # type: ignore[union-attr]  (the child holds its own copy)
        if gate is not None:
            os.close(gate[0])
    if gate is not None:
        _release_after(gate[1], proc, on_start, cwd)
    elif on_start is not None:
        on_start(proc.pid)
    exited = threading.Event()
    if log is not None:
        readers = [threading.Thread(target=_tail, args=(log, on_stdout, exited), daemon=True)]
    else:
        streams = [(proc.stdout, on_stdout)]
        streams += [(proc.stderr, on_stderr)] if on_stderr else []
        readers = [threading.Thread(target=_pump, args=pair, daemon=True) for pair in streams]
    for reader in readers:
        reader.start()
    # A blocking wait in a thread: Popen.wait(timeout) polls, adding up to 50 ms per command.
    waiter = threading.Thread(target=proc.wait, daemon=True)
    waiter.start()
    try:
        waiter.join(timeout)
    except KeyboardInterrupt:  # the operator stops us: stop what we started, then stop
        kill_group(proc.pid, signal.SIGTERM)
        raise
    timed_out = waiter.is_alive()
    if timed_out:
        kill_group(proc.pid, signal.SIGTERM)
        waiter.join(KILL_GRACE_SECONDS)
        if waiter.is_alive():
            kill_group(proc.pid, signal.SIGKILL)
    exit_status = proc.wait()
    exited.set()
    if timed_out or end_group:  # members that outlived the leader
        kill_group(proc.pid, signal.SIGKILL)
    for reader in readers:
        reader.join(PIPE_GRACE_SECONDS)
    if log is not None:
        cap_log(log)
    return Finished(exit_status, timed_out, time.monotonic() - started)


def _release_after(
    gate: int, proc: subprocess.Popen, on_start: Callable[[int], None] | None, cwd: Path
) -> None:
    """ON_START(pid) while PROC waits behind GATE, then let it go. ON_START failing (the
    journal on a full disk), or the gate: it is closed unopened, PROC ends without running,
    and the failure is raised."""
    try:
        if on_start is not None:
            on_start(proc.pid)
        with contextlib.suppress(BrokenPipeError):
            os.write(gate, b"go\n")
    except BaseException as exc:
        os.close(gate)
        proc.wait()
        if isinstance(exc, OSError) and is_environment_error(exc):
            raise environment_problem(exc, cwd, undone=False) from None
        raise
    os.close(gate)
    checkpoint("4.0.3")  # tests: the updater (the one command started held) let go


LOG_KEEP_BYTES = 1 << 20  # what a log keeps of a chatty command: its last MiB


def cap_log(path: Path, keep: int = LOG_KEEP_BYTES) -> None:
    """Cut the log at PATH to its last KEEP bytes (from a line start), saying how much went:
    the output of a chatty updater must not pile up run after run."""
    try:
        size = path.stat().st_size
        if size <= keep:
            return
        with path.open("rb") as handle:
            handle.seek(size - keep)
            tail = handle.read()
    except OSError:
        return  # the log is a courtesy: never fail a run over it
    tail = tail[tail.find(b"\n") + 1 :] if b"\n" in tail else tail
    note = f"[patchkeeper: the first {size - len(tail)} bytes of this log were dropped]\n"
    with contextlib.suppress(OSError, PatchkeeperError):  # disk full: the log stays whole
        atomic_write(path, note.encode() + tail)
