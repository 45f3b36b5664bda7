"""The doctor's questions about the install itself: is it there with a known version, does its
interpreter run, is git in the middle of nothing and free of what an update left behind."""

from __future__ import annotations

from patchkeeper.install.checkout.install import Install, install_version, operation_in_progress
from patchkeeper.install.processes.process_groups import run_in_group
from patchkeeper.leftovers.find import find_leftovers
from patchkeeper.leftovers.updater_refs import describe, updater_backups
from patchkeeper.patchset.model import PatchSet
from patchkeeper.patchset.settings import Settings
from patchkeeper.proof.doctor.finding import Finding
from patchkeeper.proof.smoke.interpreter import find_python

INTERPRETER_TIMEOUT = 30.0  # `python -c` printing its version


def install_finding(install: Install, settings: Settings) -> Finding:
    version = install_version(install, settings)
    head = install.head()
    summary = f"{install.path} (version {version.said()}, HEAD {head[:12] if head else 'none'})"
    if head is None:
        return Finding("install", False, f"{summary}: no commit checked out")
    if version.version is None:  # variants cannot be chosen: never "safe"
        return Finding("install", False, f"{summary}: the version is unknown")
    return Finding("install", True, summary)


def interpreter_finding(install: Install, settings: Settings) -> Finding:
    python = find_python(install, settings)
    if not python.found:
        return Finding("interpreter", False, f"{python.path} not found", [python.note])
    output: list[bytes] = []
    done = run_in_group(
        [str(python.path), "-c", "import sys; print(sys.version.split()[0])"],
        install.path,
        timeout=INTERPRETER_TIMEOUT,
        on_stdout=output.append,
        on_stderr=lambda _line: None,
        end_group=True,  # nothing it starts outlives the probe
    )
    if done.exit_status is None:
        return Finding("interpreter", False, f"{python.path} does not run: {done.start_error}")
    if done.timed_out:
        reason = f"no answer within {INTERPRETER_TIMEOUT:g} s (stopped)"
        return Finding("interpreter", False, f"{python.path} does not run: {reason}")
    if done.exit_status != 0:
        return Finding(
            "interpreter", False, f"{python.path} does not run (exit {done.exit_status})"
        )
    version = b"".join(output).decode(errors="replace").strip()
    summary = f"{python.path} (Python {version})"
    return Finding("interpreter", not python.note, summary, [python.note] if python.note else [])


def git_state_finding(install: Install, patch_set: PatchSet) -> Finding:
    """No merge or rebase under way, nothing an update left behind (leftovers/find.py), and no
    commits that only the updater's rescue refs still hold (updater_refs.py)."""
    problems = [reason] if (reason := operation_in_progress(install)) else []
    problems += [
        f"{item.kind} {item.label} ({item.classification})"
        for item in find_leftovers(install, patch_set)
    ]
    backups = updater_backups(install.path)
    problems += [
        f"{backup.kind} {backup.ref}: look with `{backup.inspect_command()}`"
        for backup in backups
        if backup.needs_a_person
    ]
    noted = f"; {describe(backups)}" if backups else ""
    if not problems:
        return Finding("git state", True, f"no merge in progress, no leftovers{noted}")
    summary = f"{len(problems)} leftover(s) or unfinished operation(s){noted}"
    return Finding("git state", False, summary, problems)
