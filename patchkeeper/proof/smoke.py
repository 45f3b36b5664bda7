"""Smoke checks: run a patch set's behavioural checks against the install, parse their verdicts.

A check is a Python script in the patch set's `smoke/` folder (`smoke/NAME.py`). It imports
upstream code, so it runs with the install's own interpreter, cwd at the install, the install on
`sys.path` (PYTHONPATH), a fresh HERMES_HOME, HOME and TMPDIR (never the operator's), a minimal
environment and a timeout. Those folders are made under the install's `.git/patchkeeper/smoke/`,
not in $TMPDIR, and removed when the check ends; a run killed before it could remove them leaves
them there, named after its pid, and the next run clears them. It runs in its own process
group, which is killed when it ends or times out, so helper processes a check starts cannot
outlive it.

A check prints one JSON verdict on stdout:
    {"check": NAME, "verdict": "pass"|"fail"|"error",
     "steps": [{"name", "verdict", "detail", "seconds"}, ...], ...any other facts}
and may write `progress: TEXT` lines on stderr while it runs; they are relayed as they come.
Anything else (a crash, a timeout, output that is not a verdict, a "pass" with a failing step or
a non-zero exit) is `error`: "could not check", which is never a pass.

Which interpreter: `[install] python` (a path in the install, an absolute path, or a bare name
looked up on PATH), else the install's venv. When `[install] python` names an interpreter that
is not there, nothing runs: every check is `error` ("could not check: interpreter X not
found"); running the check under some other Python instead would prove nothing about the
install. When nothing is configured and there is no venv, the checks run under patchkeeper's
own interpreter so their output can be read, with a note, and a `pass` there counts as
`error`: it proves the fix under a Python the install does not run. A pass needs the
install's own interpreter (configured, or its venv).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from packaging.version import Version

from patchkeeper.install.checkout import Install, install_version
from patchkeeper.install.lock import process_start_time
from patchkeeper.install.processes import group_alive, run_in_group
from patchkeeper.model import exitcodes
from patchkeeper.model import outcomes as oc
from patchkeeper.model.errors import UserError
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.load import Patch, PatchFile, PatchSet
from patchkeeper.patchset.settings import Settings
from patchkeeper.patchset.userfiles import SMOKE_NAME_RE
from patchkeeper.patchset.variants import bounds, release_point
from patchkeeper.patchset.versions import VersionInfo

PASS, FAIL, ERROR = "pass", "fail", "error"
VERDICTS = (PASS, FAIL, ERROR)
SMOKE_DIR = "smoke"
PROGRESS_PREFIX = "progress: "
# Where a virtualenv's interpreter usually is, tried when [install] python is not set.
VENV_PYTHONS = ("venv/bin/python", ".venv/bin/python")
SCRATCH_DIR = "smoke"  # under the install's state dir: each running check's HOME and TMPDIR
_GROUP_FILE = "group"  # in a check's scratch folder: its process group, while it may run
_OUTPUT_LIMIT = 1 << 20  # bytes of stdout kept; a verdict is a few KB
_STDERR_TAIL = 20  # lines of stderr kept to explain a crash

Progress = Callable[[str, str], None]  # (check name, text)
Relay = Callable[[str], None]  # text, for the one check that is running


# Where the interpreter came from. Only the first two are the install's own: only there can a
# check pass.
CONFIGURED, VENV, OWN, MISSING = "configured", "venv", "patchkeeper", "missing"


@dataclass(frozen=True)
class Interpreter:
    path: Path
    note: str = ""  # set when this is not the install's own interpreter, saying why
    source: str = field(default=CONFIGURED, compare=False)

    @property
    def found(self) -> bool:
        """False: [install] python names an interpreter that is not there; nothing runs."""
        return self.source != MISSING

    @property
    def installs_own(self) -> bool:
        return self.source in (CONFIGURED, VENV)


@dataclass(frozen=True)
class Step:
    name: str
    verdict: str
    detail: str = ""
    seconds: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CheckResult:
    name: str
    verdict: str
    seconds: float
    steps: tuple[Step, ...] = ()
    detail: str = ""  # why it is an error, or the check's own summary
    extra: dict[str, Any] = field(default_factory=dict)  # other facts the verdict carried


@dataclass(frozen=True)
class SmokeReport:
    python: Interpreter
    results: tuple[CheckResult, ...]

    @property
    def exit_code(self) -> int:
        """4 when any check failed or could not check; 0 when all passed (or none ran)."""
        failed = any(r.verdict != PASS for r in self.results)
        return exitcodes.SMOKE_FAILED if failed else exitcodes.OK


# ---------------------------------------------------------------- where things are


def find_python(install: Install, settings: Settings) -> Interpreter:
    """The install's interpreter: [install] python, else its venv, else ours (with a note).

    A configured interpreter that is not there is MISSING (never silently replaced by ours).
    """
    if settings.python:
        configured = Path(settings.python).expanduser()
        candidate = configured if configured.is_absolute() else install.path / configured
        if candidate.is_file():
            return Interpreter(candidate, source=CONFIGURED)
        on_path = shutil.which(settings.python) if "/" not in settings.python else None
        if on_path:
            return Interpreter(Path(on_path), source=CONFIGURED)
        where = f" in {settings.source}" if settings.source else ""
        note = f"[install] python {settings.python} not found at {candidate}{where}"
        return Interpreter(candidate, note, MISSING)
    for relative in VENV_PYTHONS:
        if (install.path / relative).is_file():
            return Interpreter(install.path / relative, source=VENV)
    note = "no [install] python set and no venv in the install"
    return Interpreter(
        Path(sys.executable), f"{note}; using patchkeeper's own {sys.executable}", OWN
    )


def interpreter_facts(python: Interpreter) -> dict[str, Any]:
    """Which interpreter ran the checks, for reports: `source` is configured, venv, patchkeeper
    (ours: a pass does not count) or missing (configured but not there: nothing ran)."""
    return {
        "path": str(python.path),
        "source": python.source,
        "found": python.found,
        "installs_own": python.installs_own,
        "note": python.note,
    }


def available_checks(patch_set: PatchSet) -> list[str]:
    folder = patch_set.root / SMOKE_DIR
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.py") if not p.name.startswith("_"))


def check_file(patch_set: PatchSet, name: str) -> Path | None:
    """smoke/NAME.py; None when NAME is not a plain file name (it may not leave smoke/)."""
    stem = name.removesuffix(".py")
    return patch_set.root / SMOKE_DIR / f"{stem}.py" if SMOKE_NAME_RE.fullmatch(stem) else None


# ---------------------------------------------------------------- scratch folders


def _owner_prefix() -> str:
    """`PID-STARTTIME-`: whose a scratch folder is, so a later run can tell a dead one."""
    return f"{os.getpid()}-{process_start_time(os.getpid()) or ''}-"


def _folder_is_dead(folder: Path) -> bool:
    """A folder of a run that is gone (its pid ended, or was reused by another process) and
    whose check no longer runs either (a check can outlive a killed patchkeeper)."""
    pid, _, rest = folder.name.partition("-")
    started, _, _ = rest.partition("-")
    if not pid.isdigit():
        return False  # not ours
    if process_start_time(int(pid)) == started:
        return False  # its run is alive
    with contextlib.suppress(OSError, ValueError):
        if group_alive(int((folder / _GROUP_FILE).read_text())):
            return False
    return True


def clear_dead_scratch(root: Path) -> list[Path]:
    """Remove the scratch folders of runs that were killed before they could (returns them)."""
    if not root.is_dir():
        return []
    dead = [folder for folder in root.iterdir() if folder.is_dir() and _folder_is_dead(folder)]
    for folder in dead:
        shutil.rmtree(folder, ignore_errors=True)
    return dead


@contextlib.contextmanager
def scratch_folder(root: Path | None, name: str) -> Iterator[Path]:
    """A fresh folder for one check, removed when it ends. Under ROOT (the install's state
    dir) when given and writable, named after this run, so that a run killed before it could
    remove it leaves nothing in $TMPDIR and the next run clears it; else a temp dir."""
    folder: Path | None = None
    if root is not None:
        try:
            root.mkdir(parents=True, exist_ok=True)
            folder = Path(tempfile.mkdtemp(prefix=f"{_owner_prefix()}{name}-", dir=root))
        except OSError:
            folder = None
    if folder is None:
        folder = Path(tempfile.mkdtemp(prefix=f"patchkeeper-smoke-{name}-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------- running one check


def clean_env(install: Path, python: Path, scratch: Path) -> dict[str, str]:
    """A minimal environment: nothing of the operator's HOME, HERMES_HOME or secrets leaks in."""
    for name in ("home", "hermes-home", "tmp"):
        (scratch / name).mkdir()
    return {
        "PATH": os.pathsep.join([str(python.parent), os.defpath]),
        "HOME": str(scratch / "home"),
        "HERMES_HOME": str(scratch / "hermes-home"),
        "TMPDIR": str(scratch / "tmp"),
        "PYTHONPATH": str(install),
        "PYTHONDONTWRITEBYTECODE": "1",  # never leave __pycache__ in the install
        "PYTHONUNBUFFERED": "1",
        "PYTHONUTF8": "1",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }


@dataclass(frozen=True)
class _Run:
    returncode: int | None  # None: killed at the timeout
    stdout: str
    stderr_tail: tuple[str, ...]
    seconds: float


def _run_process(
    argv: Sequence[str],
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    relay: Relay,
    on_start: Callable[[int], None] | None = None,
) -> _Run:
    out = bytearray()
    tail: list[str] = []

    def stdout_line(raw: bytes) -> None:
        if len(out) < _OUTPUT_LIMIT:
            out.extend(raw[: _OUTPUT_LIMIT - len(out)])

    def stderr_line(raw: bytes) -> None:
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if line.startswith(PROGRESS_PREFIX):
            relay(line[len(PROGRESS_PREFIX) :])
        elif line.strip():
            tail.append(line)
            del tail[:-_STDERR_TAIL]

    # end_group: the check's helpers (a lock holder, a worker) die with it, whatever happened.
    finished = run_in_group(
        argv,
        cwd,
        timeout=timeout,
        on_stdout=stdout_line,
        on_stderr=stderr_line,
        env=env,
        on_start=on_start,
        end_group=True,
    )
    if finished.start_error:
        return _Run(127, "", (finished.start_error,), 0.0)
    returncode = None if finished.timed_out else finished.exit_status
    return _Run(returncode, out.decode("utf-8", errors="replace"), tuple(tail), finished.seconds)


def _why_crashed(run: _Run) -> str:
    last = run.stderr_tail[-1] if run.stderr_tail else "no output"
    return f"crashed (exit {run.returncode}): {last}"


def _json_document(stdout: str) -> dict[str, Any] | None:
    """The verdict: all of stdout, else its last non-empty line (upstream code may print)."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    for text in (stdout, lines[-1] if lines else ""):
        try:
            document = json.loads(text)
        except ValueError:
            continue
        if isinstance(document, dict):
            return document
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _parse_step(raw: Any) -> Step | str:
    """A step, or why it is not one."""
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        return "a step without a name"
    if raw.get("verdict") not in VERDICTS:
        return f"step {raw['name']!r} has verdict {raw.get('verdict')!r}"
    known = {"name", "verdict", "detail", "seconds"}
    return Step(
        name=raw["name"],
        verdict=raw["verdict"],
        detail=str(raw.get("detail") or ""),
        seconds=_number(raw.get("seconds")),
        extra={k: v for k, v in raw.items() if k not in known},
    )


def worst_verdict(verdicts: Iterable[str]) -> str:
    """`fail` outranks `error` (could not check), which outranks `pass`: a real failure is
    never reported as "could not check" because another part could not run."""
    found = set(verdicts)
    return FAIL if FAIL in found else ERROR if ERROR in found else PASS


def parse_verdict(name: str, run: _Run) -> CheckResult:
    """Turn what the check printed into a result; anything doubtful is `error`."""
    seconds = round(run.seconds, 3)

    def error(detail: str) -> CheckResult:
        return CheckResult(name, ERROR, seconds, detail=detail)

    if run.returncode is None:
        return error(f"timed out after {seconds:.1f} s")
    document = _json_document(run.stdout)
    if document is None:
        return error(_why_crashed(run) if run.returncode else "printed no JSON verdict")
    if document.get("verdict") not in VERDICTS:
        return error(f"bad verdict {document.get('verdict')!r} (expected pass, fail or error)")
    raw_steps = document.get("steps", [])
    if not isinstance(raw_steps, list):
        return error("bad verdict: 'steps' is not a list")
    steps = [_parse_step(raw) for raw in raw_steps]
    bad = next((s for s in steps if isinstance(s, str)), None)
    if bad is not None:
        return error(f"bad verdict: {bad}")
    parsed = tuple(s for s in steps if isinstance(s, Step))
    verdict = worst_verdict([document["verdict"], *(s.verdict for s in parsed)])
    detail = str(document.get("detail") or "")
    if verdict == PASS and run.returncode != 0:
        verdict, detail = ERROR, f"said pass but exited {run.returncode}"
    extra = {k: v for k, v in document.items() if k not in {"check", "verdict", "steps", "detail"}}
    return CheckResult(name, verdict, seconds, parsed, detail, extra)


def run_check(
    python: Interpreter,
    install: Path,
    path: Path,
    *,
    timeout: float,
    args: Sequence[str] = (),
    on_progress: Progress | None = None,
    scratch_root: Path | None = None,
) -> CheckResult:
    """Run one check file against INSTALL and return its (never optimistic) result.

    Its HOME, HERMES_HOME and TMPDIR are in a fresh folder under SCRATCH_ROOT (the install's
    state dir; else a temp dir), removed when the check ends.
    """
    name = path.stem
    if not path.is_file():
        return CheckResult(name, ERROR, 0.0, detail=missing_check(name, path))

    def relay(text: str) -> None:
        if on_progress is not None:
            on_progress(name, text)

    with scratch_folder(scratch_root, name) as scratch:

        def started(pgid: int) -> None:
            with contextlib.suppress(OSError):
                (scratch / _GROUP_FILE).write_text(str(pgid))

        env = clean_env(install, python.path, scratch)
        argv = [str(python.path), "-B", str(path), *args]
        run = _run_process(argv, install, env, timeout, relay, started)
    return parse_verdict(name, run)


# ---------------------------------------------------------------- running a set of checks


def run_checks(
    install: Install,
    settings: Settings,
    patch_set: PatchSet,
    names: Iterable[str],
    on_progress: Progress | None = None,
    *,
    args: Sequence[str] = (),
    timeout: float | None = None,
) -> SmokeReport:
    """Run the named checks of PATCH_SET, in order, each once, with ARGS (`--probe`)."""
    python = find_python(install, settings)
    scratch_root = install.state_dir / SCRATCH_DIR
    with contextlib.suppress(OSError):
        clear_dead_scratch(scratch_root)  # left by runs that were killed
    results = []
    for name in dict.fromkeys(n.removesuffix(".py") for n in names):
        path = check_file(patch_set, name)
        if path is None:
            results.append(CheckResult(name, ERROR, 0.0, detail=f"{name!r} is not a check name"))
            continue
        if not python.found:
            detail = f"could not check: interpreter {python.path} not found ({python.note})"
            results.append(CheckResult(name, ERROR, 0.0, detail=detail))
            continue
        if on_progress is not None:
            on_progress(name, f"running with {python.path}")
        limit = timeout or settings.smoke_timeout
        result = run_check(
            python,
            install.path,
            path,
            timeout=limit,
            args=args,
            on_progress=on_progress,
            scratch_root=scratch_root,
        )
        results.append(result if python.installs_own else _not_the_installs(result, python))
    return SmokeReport(python, tuple(results))


def _not_the_installs(result: CheckResult, python: Interpreter) -> CheckResult:
    """A result under patchkeeper's own interpreter: a pass proves nothing about the install."""
    if result.verdict == PASS:
        detail = (
            f"could not check: passed under patchkeeper's own interpreter {python.path}, not "
            "the install's (no [install] python set and no venv in the install)"
        )
        return replace(result, verdict=ERROR, detail=detail)
    under = f"under patchkeeper's own interpreter {python.path}"
    return replace(result, detail=f"{result.detail} ({under})" if result.detail else under)


def missing_check(name: str, path: Path) -> str:
    return f"could not check: no check named {name} ({path} is missing)"


def named_checks(patch_set: PatchSet) -> list[str]:
    """Every check a patch's `Smoke:` header names, whether its file is there or not."""
    named = [n for p in patch_set.patches for v in p.variants for n in v.smoke]
    return list(dict.fromkeys(n.removesuffix(".py") for n in named))


def select_checks(patch_set: PatchSet, wanted: str | None) -> list[str]:
    """`--check NAME` (which must exist), else every check in the patch set's smoke/ folder
    and every check a `Smoke:` header names (a missing one is run as "could not check")."""
    if wanted is None:
        return list(dict.fromkeys([*available_checks(patch_set), *named_checks(patch_set)]))
    path = check_file(patch_set, wanted)
    if path is None or not path.is_file():
        known = ", ".join(available_checks(patch_set)) or "none"
        where = path or repr(wanted)
        raise UserError(f"{where}: no such smoke check (known: {known})")
    return [wanted.removesuffix(".py")]


def predates_every_variant(patch: Patch, version: Version) -> bool:
    """VERSION is older than every variant of PATCH (each Applies-To leaves it out and has a
    lower bound at or above it, whatever operator gives the bound: `>=`, `>`, `~=`, `==X.*`):
    no fix for a release this old exists yet, unlike a version past every range."""
    point = release_point(version)

    def ahead(variant: PatchFile) -> bool:
        specs = variant.applies_to
        return (
            specs is not None
            and not specs.contains(version, prereleases=True)
            and point <= bounds(specs).low
        )

    return bool(patch.variants) and all(ahead(v) for v in patch.variants)


def unfixed_results(
    patch_set: PatchSet, results: Iterable[PatchResult], version: Version | None
) -> list[PatchResult]:
    """The not-applicable results of patches whose every variant is for later releases.

    Their fix has no variant here, yet the path it fixes is there: their checks still run, so
    a run is never green while a check shows a known-broken path broken.
    """
    if version is None:
        return []
    unfixed = []
    for result in results:
        patch = patch_set.by_name(result.name)
        if result.outcome == oc.NOT_APPLICABLE and patch and predates_every_variant(patch, version):
            unfixed.append(result)
    return unfixed


def unfixed_notes(
    patch_set: PatchSet, unfixed: Iterable[PatchResult], checks: Iterable[dict[str, Any]]
) -> list[str]:
    """For each unfixed patch whose check did not pass: which path failed, and why no fix
    applies (the releases its variants are for)."""
    failing = {c["name"]: c for c in checks if c["verdict"] != PASS}
    notes = []
    for result in unfixed:
        patch = patch_set.by_name(result.name)
        variants = patch.variants if patch else ()
        named = dict.fromkeys(n.removesuffix(".py") for v in variants for n in v.smoke)
        for name in (n for n in named if n in failing):
            ranges = " or ".join(dict.fromkeys(str(v.applies_to) for v in variants))
            said = "could not check" if failing[name]["verdict"] == ERROR else "failed"
            detail = failing[name].get("detail") or ""
            why = f": {detail}" if detail else f"; update upstream to a release for {ranges} first"
            notes.append(
                f"{result.name} has no fix for this release (its variants are for {ranges}), "
                f"and its check {name} {said}{why}"
            )
    return notes


def checks_for_patches(
    patch_set: PatchSet,
    settings: Settings,
    results: Iterable[PatchResult],
    version: Version | None = None,
) -> list[str]:
    """Checks named by the `Smoke:` headers of patches now in the install, then [smoke] checks.

    A patch counts when its content is there: written now, already applied, or upstream has it
    (the check proves the fix works whoever ships it). Conflicts name no checks: their fix is
    not there to prove. A not-applicable patch names its checks only when the install (at
    VERSION) is older than every variant (`unfixed_results`): the path is there, unfixed.
    """
    results = list(results)
    unfixed = unfixed_results(patch_set, results, version)
    names: list[str] = []
    for result in unfixed:
        patch = patch_set.by_name(result.name)
        names += [n for v in (patch.variants if patch else ()) for n in v.smoke]
    for result in results:
        if result.outcome in (*oc.FAILED, oc.NOT_APPLICABLE):
            continue
        patch = patch_set.by_name(result.name)
        if patch is None:
            continue
        if result.variant:
            variant_path = patch_set.root / result.variant
            names += [n for v in patch.variants if v.path == variant_path for n in v.smoke]
        elif result.outcome == oc.UPSTREAM_HAS_IT:
            names += [n for v in probed_variants(patch, result.detail) for n in v.smoke]
    return list(dict.fromkeys([*names, *settings.smoke_checks]))


def probed_variants(patch: Patch, detail: str) -> list[PatchFile]:
    """The variants of PATCH whose `Upstream-Has:` probe retired it, as DETAIL reports it.

    A patch retired by content with no variant for the release (heartbeat-fence on 0.21.3+)
    has no chosen variant, yet upstream's fix is there: the matched variant's check proves
    it works, whoever ships it.
    """
    return [v for v in patch.variants if v.upstream_has and detail == v.upstream_has_reason]


def patches_proven_by(
    patch_set: PatchSet, results: Iterable[PatchResult], checks: Iterable[str]
) -> list[str]:
    """The patches among RESULTS whose chosen variant's `Smoke:` header names one of CHECKS."""
    wanted = {name.removesuffix(".py") for name in checks}
    names = []
    for result in results:
        patch = patch_set.by_name(result.name)
        chosen = patch_set.root / result.variant if result.variant else None
        for variant in patch.variants if patch else ():
            if variant.path == chosen and wanted & {n.removesuffix(".py") for n in variant.smoke}:
                names.append(result.name)
    return list(dict.fromkeys(names))


def run_for_patches(
    install: Install,
    settings: Settings,
    patch_set: PatchSet,
    results: Iterable[PatchResult],
    on_progress: Progress | None = None,
    version: VersionInfo | None = None,
) -> SmokeReport:
    """What `update` calls after putting the patches back: the checks their headers name.

    VERSION is the install's version as the caller already worked it out (`apply_patches`'s
    report has it); without it, and only when a patch is not applicable, it is worked out
    again (version_command or git describe). A check named by a header but missing from
    smoke/ comes back as `error`, never skipped.
    """
    results = list(results)
    if version is None and any(r.outcome == oc.NOT_APPLICABLE for r in results):
        version = install_version(install, settings)
    names = checks_for_patches(
        patch_set, settings, results, version.version if version else None
    )
    return run_checks(install, settings, patch_set, names, on_progress)
