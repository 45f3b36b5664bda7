"""Command-line entry point.

Commands live one per module under `patchkeeper/commands/` and are imported only when named:
`patchkeeper --version` answers before anything but this module is imported, a plain `check`
runs without click (commands/check_args.py), `patchkeeper --help` lists every
command from the one-line summaries below without importing a command module, and a command
loads only what it uses. Every user-facing failure is a PatchkeeperError: printed as one line,
mapped to its exit code.

A reader that goes away early (`patchkeeper check | head -1`) changes nothing: what can no
longer be delivered to it is dropped, silently, and the command runs to its end with the exit
code it would have had. An update is never cut short half-way because a pipe closed. A stream
the machine refuses (stderr on a full disk) is dropped the same way, and named once at the end
on the other stream.
"""

import io
import os
import sys

from patchkeeper import __version__

TYPE_CHECKING = False  # nothing more at import for --version (tests/test_check_args.py)
if TYPE_CHECKING:
    from typing import NoReturn

    import click

# name -> module under patchkeeper.commands that defines `command`
COMMANDS: dict[str, str] = {
    "status": "status",
    "apply": "apply",
    "unapply": "unapply",
    "check": "check",
    "lint": "lint",
    "init": "init",
    "record": "record",
    "refresh": "refresh",
    "demo": "demo",
    "audit": "audit",
    "update": "update",
    "leftovers": "leftovers",
    "recover": "recover",
    "smoke": "smoke",
    "doctor": "doctor",
    "fleet": "fleet",
    "port": "port",
    "timer": "timer",
}

# name -> the first line of its help, for `patchkeeper --help` without importing every
# command module (tests/test_check_ci.py keeps them equal to the commands' own). A command
# missing here is imported to get its summary.
SUMMARIES: dict[str, str] = {
    "status": "Show each patch's outcome against the install's current work tree.",
    "apply": "Apply every patch that applies; report the rest.",
    "unapply": "Remove what patchkeeper wrote (all patches, or the NAMES given).",
    "check": "Show the outcome of every patch against each ref, touching nothing.",
    "lint": "Check series, headers, specifiers, variants, diffs and paths of a patch set.",
    "init": "Copy the bundled patch set (series, patches, smoke checks, patchkeeper.toml) to DIR.",
    "record": "Capture the current changes to PATHs as patch NAME and add it to series.",
    "refresh": "Rewrite patch NAME (the variant for the current version) from the work tree.",
    "demo": "Build a practice upstream and walk through status, apply, check and update.",
    "audit": "Check the cron ledger for jobs that silently did not run.",
    "update": (
        "Run the upstream update ([update] command, plus ARGS after `--`) keeping the patches."
    ),
    "leftovers": (
        "List what updates left behind (parked stashes, autostash files, unmerged paths, edits "
        "patchkeeper could not restore), or show, restore or drop one by ID."
    ),
    "recover": "Bring the install to a consistent state after an update was interrupted.",
    "smoke": "Run behavioural smoke checks against the install with its own interpreter.",
    "doctor": "Say whether the install is safe to update unattended; exit 0 only when all hold.",
    "fleet": "Roll an upstream update out to many installs with Ansible, and report on it.",
    "port": "Carry the patch set onto a new upstream release REF, variant by variant.",
    "timer": "Run `patchkeeper update` daily: install the systemd timer, or print a cron line.",
}


_GROUP: list["click.Group"] = []


def _group() -> "click.Group":
    """The click group of every command, built on first use (importing click takes longer
    than the whole of `patchkeeper --version`)."""
    if _GROUP:
        return _GROUP[0]
    import importlib

    import click

    class LazyGroup(click.Group):
        def list_commands(self, ctx: click.Context) -> list[str]:
            return sorted(COMMANDS)

        def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
            module_name = COMMANDS.get(cmd_name)
            if module_name is None:
                return None
            qualified = f"patchkeeper.commands.{module_name}"
            try:
                module = importlib.import_module(qualified)
            except ModuleNotFoundError as exc:
                if exc.name == qualified:  # a command not shipped in this build
                    return None
                raise
            finally:
                _start_up_loaded()
            return module.command

        def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
            """The command list, from SUMMARIES rather than the imported commands. Each
            summary is shown whole, wrapped under its name: click's short help cuts it at the
            terminal's width ("touching..."), which leaves half a sentence."""
            rows = []
            for name in self.list_commands(ctx):
                summary = SUMMARIES.get(name)
                if summary is None:
                    command = self.get_command(ctx, name)
                    if command is None or command.hidden:
                        continue
                    summary = command.get_short_help_str(limit=10_000)
                rows.append((name, summary))
            if rows:
                with formatter.section("Commands"):
                    formatter.write_dl(rows)

    @click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(__version__, prog_name="patchkeeper")
    def cli() -> None:
        """Keep local fixes alive across upstream updates of a git-installed project.

        \b
        Example:
          patchkeeper status --install ~/.hermes/hermes-agent
        """

    _GROUP.append(cli)
    return cli


def __getattr__(name: str) -> object:
    """`cli`, the click group (`from patchkeeper.cli import cli`), built on first use."""
    if name == "cli":
        return _group()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Per stream (1: stdout, 2: stderr), the first refusal of a write other than a closed pipe (a
# full disk, `> /dev/full`): said once, on the other stream, at the end of the run.
_REFUSED: dict[int, OSError] = {}
_FAILED_WITH: list[str] = []  # the error line `_fail` printed, said again if stderr refused it


class _DroppedWhenClosed(io.RawIOBase):
    """The file descriptor FD, written as is, until a write to it fails: from the first EPIPE
    (its reader is gone), ENOSPC, EIO, ... on, FD is /dev/null (for this process and every
    process started after), and a write reports everything as written. Python ignores SIGPIPE,
    so without this the first write after the reader left (or the disk filled) would raise
    from wherever the command was: half-way through an update, say, leaving its journal."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: bytes) -> int:
        try:
            return os.write(self._fd, data)
        except OSError as exc:
            _to_devnull(self._fd)
            if not isinstance(exc, BrokenPipeError):
                _REFUSED.setdefault(self._fd, exc)
            return memoryview(data).nbytes


def _to_devnull(fd: int) -> None:
    """Point FD at os.devnull: what is written to it from now on is dropped."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _survive_closed_pipes() -> None:
    """Put stdout and stderr (the process's own, not a caller's replacement) on
    _DroppedWhenClosed, with the same encoding and buffering. A stream closed from the start
    (`patchkeeper status >&-`: Python sets it to None) writes to os.devnull, so the exit code
    is still the command's own."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115
            continue
        if stream is not getattr(sys, f"__{name}__"):
            continue
        try:
            stream.flush()
            fd = stream.fileno()
        except (OSError, ValueError):
            continue
        guarded = io.TextIOWrapper(
            io.BufferedWriter(_DroppedWhenClosed(fd)),
            encoding=stream.encoding,
            errors=stream.errors,
            line_buffering=stream.line_buffering,
            write_through=getattr(stream, "write_through", False),
        )
        setattr(sys, name, guarded)


def _wants_json(argv: list[str]) -> bool:
    from itertools import pairwise

    pairs = pairwise(argv)
    return "--json" in argv or "--format=json" in argv or ("--format", "json") in pairs


# Subcommands (and `leftovers` actions) whose documents carry their own command name.
_NAMED_PARTS: dict[str, tuple[str, ...]] = {
    "fleet": ("playbook", "report", "ready"),
    "leftovers": ("show", "restore", "drop"),
}


def _command_name(args: list[str]) -> str:
    """The command a document names: `update`, or `fleet report` for a subcommand."""
    index = next((i for i, arg in enumerate(args) if arg in COMMANDS), None)
    if index is None:
        return ""
    name = args[index]
    part = next((a for a in args[index + 1 :] if a in _NAMED_PARTS.get(name, ())), None)
    return f"{name} {part}" if part else name


def _failure_metrics(code: int) -> None:
    """`--metrics FILE`: a run that stopped on an error says so there too (report/metrics.py,
    loaded only then)."""
    from patchkeeper.report.metrics import write_failure_metrics

    write_failure_metrics(sys.argv[1:], _command_name(sys.argv[1:]), code)


def _fail(message: str, code: int) -> "NoReturn":
    """One line on stderr; for JSON callers also one document on stdout; for `--metrics`
    callers the exit code in the metrics file."""
    import click

    _FAILED_WITH[:] = [message]
    click.echo(f"patchkeeper: {message}", err=True)
    _failure_metrics(code)
    if _wants_json(sys.argv):
        from patchkeeper.report.render import emit_json

        try:
            emit_json(_command_name(sys.argv[1:]), code, error=message.removeprefix("error: "),
                      patches=[])  # fmt: skip
        except OSError:  # stdout is what failed (a full disk): the line above says it all
            _to_devnull(sys.stdout.fileno())
    sys.exit(code)


_COLLECTION_PAUSED: list[bool] = []


def _start_up_loading() -> None:
    """No garbage collection while click and the command's modules load, the first time in
    this process: what they make lives as long as the process, and the collections their
    allocations would set off walk it for nothing (5 ms of an update). `_start_up_loaded`,
    once the command is imported, freezes all there is then (never walked again) and turns
    collection back on for what the command makes; `main` ends the pause too, however it
    ends (no command module loads for `--help` or a usage error)."""
    import gc  # (imported here: --version loads nothing but this module)

    if "click" not in sys.modules and gc.isenabled():  # a second `main` in one process: no
        gc.disable()
        _COLLECTION_PAUSED.append(True)


def _start_up_loaded() -> None:
    if _COLLECTION_PAUSED:
        import gc

        _COLLECTION_PAUSED.clear()
        gc.freeze()
        gc.enable()


def _no_collections_on_the_way_out() -> None:
    """Freeze every object at exit (the last exit hook), so that the interpreter's shutdown
    does not walk them all again in its closing garbage collections: 20 ms of an update's run,
    after its report is out. The exit hooks themselves (weakref finalizers: the scratch
    folders) run as ever, and stdout and stderr are still flushed; what is skipped is freeing
    reference cycles, whose memory goes back with the process. Registered once however many
    times `main` runs in one process."""
    import atexit
    import gc

    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)


def main() -> None:
    _survive_closed_pipes()
    try:
        _main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        sys.exit(_delivered(code))


def _delivered(code: int) -> int:
    """CODE, the run's own exit code, whatever stdout or stderr refused: the run was never cut
    short for it. A refused stream is named once on the other one (on stdout only for text
    output: a JSON document stays one document)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    names = {1: "stdout", 2: "stderr"}
    for fd, refused in sorted(_REFUSED.items()):
        other = sys.stderr if fd == 1 else sys.stdout
        if fd not in names or set(names) <= set(_REFUSED) or (fd == 2 and _wants_json(sys.argv)):
            continue
        said = f"{names[fd]}: {refused.strerror}; what was left to write there was dropped"
        if fd == 2 and _FAILED_WITH:  # the one error line, which stderr did not take
            said += f"\npatchkeeper: {_FAILED_WITH[0]}"
        try:
            other.write(f"patchkeeper: note: {said}\n")
            other.flush()
        except (OSError, ValueError):
            pass
    return code


def _main() -> None:
    if sys.argv[1:] == ["--version"]:  # what click's version option prints, without click
        sys.stdout.write(f"patchkeeper, version {__version__}\n")
        sys.exit(0)
    _no_collections_on_the_way_out()
    _start_up_loading()
    if sys.argv[1:2] == ["check"]:  # a plain check needs no click
        from patchkeeper.commands.check_args import plain_check

        if (options := plain_check(sys.argv[2:], os.environ)) is not None:
            from patchkeeper.commands.check_run import run_plain

            _start_up_loaded()
            run_plain(options, fail=_fail, fail_unexpected=_fail_unexpected)
    import click

    from patchkeeper.report.render import use_colour

    try:  # click drops colour off a terminal unless told: FORCE_COLOR tells it
        code = _group().main(standalone_mode=False, color=use_colour() or None)
    except click.exceptions.Abort:
        _fail("aborted", 1)
    except click.ClickException as exc:
        if _wants_json(sys.argv):  # automation reads a document, even for a usage mistake
            _fail(f"error: {exc.format_message()}", 2)
        exc.show()
        _failure_metrics(2)
        sys.exit(2)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except Exception as exc:
        _fail_unexpected(exc)
    finally:  # also where no command module loaded (`--help`, a usage error)
        _start_up_loaded()
    sys.exit(code if isinstance(code, int) else 0)


def _fail_unexpected(exc: Exception) -> "NoReturn":
    """EXC, raised by a command and not click's: its own exit code when it is ours, exit 7 for
    the machine's refusal, else exit 1 (an internal error), each as one line."""
    from patchkeeper.model import exitcodes
    from patchkeeper.model.errors import PatchkeeperError, is_environment_error

    if isinstance(exc, PatchkeeperError):
        _fail(f"error: {exc}", exc.exit_code)
    if os.environ.get("PATCHKEEPER_DEBUG"):  # one line and exit 1 or 7, unless asked
        raise exc
    if is_environment_error(exc):  # disk full, read-only, permission: one line, exit 7
        assert isinstance(exc, OSError)
        where = exc.filename if exc.filename is not None else "(a pipe or unnamed file)"
        _fail(f"error: {where}: {exc.strerror}", exitcodes.ENVIRONMENT)
    _fail(
        f"internal error: {type(exc).__name__}: {exc} "
        "(a bug; PATCHKEEPER_DEBUG=1 shows the traceback)",
        exitcodes.INTERNAL,
    )
