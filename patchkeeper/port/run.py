"""The port's driver: start one, go on after a hand fix or a kill (`--continue`), or undo it
(`--abort`). Every step is saved in the state before the next begins (state.py); the patch
set folder changes once, at the end (newset.py).

For tests, PATCHKEEPER_STOP_AT_PHASE=POINT kills the process at `port.NAME` (after patch NAME
is decided), `port.building` (the draft copied, not written), `port.built` (the new set built,
not in place), `port.aside` and `port.swapped`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from patchkeeper.engine.checking import resolve
from patchkeeper.install.checkout.install import Install
from patchkeeper.install.checkout.version_chain import ref_versions
from patchkeeper.install.plumbing import git
from patchkeeper.install.plumbing.scratch_index import object_store
from patchkeeper.install.records.update_journal import checkpoint
from patchkeeper.install.system.durable import atomic_write
from patchkeeper.model.errors import UserError
from patchkeeper.model.nextstep import command
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.load import load_patch_set
from patchkeeper.patchset.model import PatchSet
from patchkeeper.patchset.settings import Settings, load_settings
from patchkeeper.port import newset, ranges
from patchkeeper.port.conflict import lay_out, read_resolved
from patchkeeper.port.judging import Choice, choose, fresh_variant, judge_rest, settled
from patchkeeper.port.proving import prove
from patchkeeper.port.result import ABORTED, PORTED, STOPPED, PortReport
from patchkeeper.port.state import (
    KEEP,
    PORTING,
    RETIRE,
    STATE_FILE,
    SWAPPING,
    Conflict,
    Decision,
    PortState,
    diff_file,
    load,
    port_dir,
    remove,
    save,
    worktree,
)
from patchkeeper.port.state import STOPPED as AT_CONFLICT
from patchkeeper.proof.smoke.results import CheckResult


@dataclass(frozen=True)
class Where:
    """The install and the set a port works on."""

    install: Install
    settings: Settings
    patch_set: PatchSet


def _report(state: PortState, status: str, **more: object) -> PortReport:
    return PortReport(
        status, state.onto, state.commit, state.version, state.patches, state.out,
        list(state.decisions), proofs=dict(state.proofs), proof_note=state.proof_note,
        **more,  # type: ignore[arg-type]
    )  # fmt: skip


def _refuse_running(install: Install) -> None:
    state = load(install.state_dir)
    if state is not None:
        raise UserError(
            f"{install.path}: a port onto {state.onto} is in progress; run "
            f"`{command('port', '--continue', install=install.path)}` "
            "or `--abort` first"
        )


def _target(out: Path | None, root: Path) -> str | None:
    if out is None:
        return None
    out = out.expanduser().resolve()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"{out}: --out must be a new or empty folder")
    if out == root or root in out.parents:
        raise UserError(f"{out}: --out must be outside the patch set {root}")
    return str(out)


@contextmanager
def private_objects(install: Install) -> Iterator[None]:
    """Every object the port writes (ported trees, blobs of the new diffs, the scratch work)
    goes to `.git/patchkeeper/port/objects`, read with the install's store as an alternate,
    and goes with the port's state: the install's `.git/objects` is left as it was."""
    saved = {name: os.environ.get(name) for name in _OBJECT_VARS}
    store = object_store(install.path)
    objects = port_dir(install.state_dir) / "objects"
    objects.mkdir(parents=True, exist_ok=True)
    os.environ["GIT_OBJECT_DIRECTORY"] = str(objects)
    os.environ["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = os.pathsep.join(
        [str(store), *filter(None, [saved["GIT_ALTERNATE_OBJECT_DIRECTORIES"]])]
    )
    try:
        yield
    finally:
        if not (port_dir(install.state_dir) / STATE_FILE).exists():
            shutil.rmtree(port_dir(install.state_dir), ignore_errors=True)  # nothing began
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


_OBJECT_VARS = ("GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES")


def start(where: Where, onto: str, out: Path | None) -> PortReport:
    """A new port of WHERE's set onto ONTO (written to OUT, else in place)."""
    install = where.install
    _refuse_running(install)
    with private_objects(install):
        return _start(where, onto, out)


def _start(where: Where, onto: str, out: Path | None) -> PortReport:
    install, root = where.install, where.patch_set.root.resolve()
    target = _target(out, root)
    commits, trees = resolve(install.path, [onto])
    info = ref_versions(install.path, commits, where.settings)[0]
    if info.version is None:
        raise UserError(
            f"{onto}: its release is unknown ({info.text}); a port splits ranges at it "
            "(add a version source that answers there, list its tag in [tags], or port onto a "
            "release tag)"
        )
    choices = [choose(patch, info.version) for patch in where.patch_set.patches]  # refuses
    # an unreadable variant before anything is kept
    state = PortState(
        install=str(install.path), patches=str(root), out=target, onto=onto,
        commit=commits[0], version=info.version.public, fingerprint=newset.fingerprint(root),
        base_tree=trees[0], made_for=_made_for(where, choices, info.version),
        not_widened=_not_widened(where, choices, info.version),
    )  # fmt: skip
    save(install.state_dir, state)
    return _proceed(where, state)


def _made_for(where: Where, choices: list[Choice], version: Version) -> dict[str, str]:
    """The release each judged variant's `Base` names, where it is later than VERSION (a
    port back to an older release): patch name -> release."""
    repo, found = where.install.path, {}
    for choice in choices:
        base = choice.variant.base
        commit = git.rev_parse(repo, base) if choice.holds and base else None
        if commit is None:
            continue
        [info] = ref_versions(repo, [commit], where.settings)
        if info.version is not None and info.version > version:
            found[choice.patch.name] = info.version.public
    return found


def _not_widened(where: Where, choices: list[Choice], version: Version) -> dict[str, str]:
    """For each variant that does not hold VERSION, a tagged release other than VERSION that
    widening its range would take in (`<0.22` widened to `<=0.22.1` takes in 0.22.0): such
    a patch gets a new variant instead, and that release is judged as before."""
    wanted = [c for c in choices if not c.holds]
    releases = _tagged_releases(where) if wanted else []
    found = {}
    for choice in wanted:
        old = choice.variant.fields.get("applies-to")
        wider = ranges.widen(old, version, choice.others())
        crossed = [
            r for r in releases
            if r.public != version.public and ranges.contains(wider, r)
            and not ranges.contains(old, r)
        ]  # fmt: skip
        if crossed:
            found[choice.patch.name] = crossed[0].public
    return found


def _tagged_releases(where: Where) -> list[Version]:
    """The releases of the commits the install's repository tags."""
    repo = where.install.path
    listing = git.out(["tag", "--list", "--format=%(objectname) %(*objectname)"], repo)
    commits = [line.split()[-1] for line in listing.splitlines() if line.strip()]
    asked = "".join(f"{commit}\n" for commit in commits).encode()
    answers = git.run(["cat-file", "--batch-check=%(objecttype)"], repo, stdin=asked)
    kinds = answers.stdout.decode().splitlines()  # `SHA missing` for an object not there
    commits = [c for c, kind in zip(commits, kinds, strict=False) if kind == "commit"]
    if not commits:
        return []
    infos = ref_versions(repo, commits, where.settings)
    return sorted({info.version for info in infos if info.version is not None})


def _choices(where: Where, state: PortState) -> list[Choice]:
    version = Version(state.version)
    return [choose(patch, version) for patch in where.patch_set.patches]


def _proceed(where: Where, state: PortState) -> PortReport:
    """Judge what is left; stop at a conflict, or prove, build and put the set in place."""
    install, root = where.install, Path(state.patches)
    choices = _choices(where, state)
    version = Version(state.version)
    stop = judge_rest(install.path, install.state_dir, choices, state, version, root, checkpoint)
    if stop is not None:
        return _stop_at(where, state, settled(choices[state.position], stop, root), stop)
    if not state.proof_note:
        state.proofs, checks, state.proof_note = prove(install, where.settings, state, root)
    else:
        checks = []
    _unchanged(state)
    if state.out is None and all(d.action in (KEEP, RETIRE) for d in state.decisions):
        remove(install.state_dir)
        report = _report(state, PORTED, checks=checks)
        report.notes.append(f"nothing to write: {state.patches} stays as it is")
        return report
    target = Path(state.out or state.patches)
    folder = newset.draft_folder(target)
    newset.build(install.state_dir, state, folder)
    state.phase, state.new_folder = SWAPPING, str(folder)
    state.new_inode = os.stat(folder).st_ino
    save(install.state_dir, state)
    checkpoint("port.built")
    return _swap(where, state, checks)


def _swap(where: Where, state: PortState, checks: list[CheckResult]) -> PortReport:
    assert state.new_folder is not None
    new, target = Path(state.new_folder), Path(state.out or state.patches)
    inside = state.out is None and _cwd_inside(target)
    if not newset.swapped(state):
        if state.out is not None:
            os.replace(new, target)
        else:
            newset.put_in_place(new, target, checkpoint)
    elif new.exists() and state.out is None:
        shutil.rmtree(new)  # the old set, traded to the new folder's name
    remove(where.install.state_dir)
    report = _report(state, PORTED, checks=checks)
    report.notes.append(f"the ported set is {target}")
    if inside:  # the shell stands in the old folder, now removed: git and ls see nothing
        report.notes.append(f"your shell's folder was replaced: run `cd {target}` to see it")
    return report


def _cwd_inside(folder: Path) -> bool:
    try:
        here = Path(os.getcwd())
    except OSError:
        return False
    return here == folder or folder in here.parents


def _unchanged(state: PortState) -> None:
    if newset.fingerprint(Path(state.patches)) != state.fingerprint:
        raise UserError(
            f"{state.patches}: the patch set changed while the port was in progress; "
            "run `patchkeeper port --abort` and port again"
        )


def _stop_at(where: Where, state: PortState, choice: Choice, result: PatchResult) -> PortReport:
    install = where.install
    if result.outcome != "conflict":
        raise UserError(
            f"{choice.variant.path}: {result.outcome} on {state.onto} ({result.detail}); fix "
            "it, then run patchkeeper port --abort and port again"
        )
    folder = worktree(install.state_dir)
    laid = lay_out(
        install.path, folder, state.base_tree, choice.variant, result, state.onto, install.head()
    )
    relative = str(choice.variant.path.relative_to(state.patches))
    state.phase = AT_CONFLICT
    state.conflict = Conflict(choice.patch.name, relative, laid.files, laid.marked, laid.source)
    save(install.state_dir, state)
    fix = ", ".join(str(folder / p) for p in (laid.marked or laid.files))
    step = (
        f"{choice.patch.name} conflicts on {state.onto}: fix {fix}, then run "
        f"`{command('port', '--continue', install=install.path)}` (or --abort)"
    )
    return _report(state, STOPPED, conflict=state.conflict, worktree=str(folder), next_step=step)


def resume(install: Install, where_of: Callable[[Path], Where]) -> PortReport:
    """`--continue`: after a hand fix, a kill, or a swap cut short."""
    state = load(install.state_dir)
    if state is None:
        raise UserError(f"{install.path}: no port is in progress")
    where = where_of(Path(state.patches))
    with private_objects(install):
        return _resume(where, state)


def _resume(where: Where, state: PortState) -> PortReport:
    if state.phase == SWAPPING:
        return _swap(where, state, []) if newset.recover_swap(state) else _rebuild(where, state)
    _unchanged(state)
    if state.phase == AT_CONFLICT:
        _take_fix(where, state)
    return _proceed(where, state)


def _rebuild(where: Where, state: PortState) -> PortReport:
    state.phase, state.new_folder, state.new_inode = PORTING, None, None
    return _proceed(where, state)


def _take_fix(where: Where, state: PortState) -> None:
    """The hand fix of the conflict: the patch's new diff on REF, decided as a new variant."""
    install, conflict = where.install, state.conflict
    assert conflict is not None
    choice = _choices(where, state)[state.position]
    folder = worktree(install.state_dir)
    tree, diff = read_resolved(install.path, folder, state.base_tree, conflict.files)
    if not diff:
        decision = Decision(
            conflict.name, RETIRE, conflict.variant, "resolved",
            f"resolved by hand to {state.onto}'s own content: upstream has it",
        )  # fmt: skip
    else:
        made_for = state.made_for.get(conflict.name)
        decision = fresh_variant(
            choice, "resolved", f"resolved by hand in {folder}", Version(state.version),
            Path(state.patches), Version(made_for) if made_for else None,
        )  # fmt: skip
        atomic_write(diff_file(install.state_dir, conflict.name), diff)
    state.decisions.append(decision)
    state.base_tree = tree
    state.position += 1
    state.phase, state.conflict = PORTING, None
    save(install.state_dir, state)
    shutil.rmtree(folder, ignore_errors=True)


def abort(install: Install) -> PortReport:
    """`--abort`: the set as it was before the port, the port's state gone."""
    state = load(install.state_dir)
    if state is None:
        raise UserError(f"{install.path}: no port is in progress")
    if state.phase == SWAPPING:
        newset.undo_swap(state)
    else:  # a build cut short by a kill leaves its draft
        shutil.rmtree(newset.draft_folder(Path(state.out or state.patches)), ignore_errors=True)
    remove(install.state_dir)
    report = _report(state, ABORTED)
    report.notes.append(f"the patch set {state.patches} is as it was before the port")
    return report


def open_where(install: Install, root: Path) -> Where:
    """The set at ROOT (the port's), with its settings, for INSTALL."""
    return Where(install, load_settings(root), load_patch_set(root))
