"""The smoke checks of the ported fixes, run against the ported tree (REF with every ported
patch, checked out under `.git/patchkeeper/port/tree/`) with the install's interpreter.

A pass counts only under the install's own interpreter; a check that cannot run, or is not
there, leaves the fix unproven, and the report says so: a port never claims what it did not
prove.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from patchkeeper.install.checkout.install import Install
from patchkeeper.install.plumbing import git
from patchkeeper.install.plumbing.scratch_index import scratch_index
from patchkeeper.patchset.settings import Settings
from patchkeeper.port.state import RETIRE, PortState, port_dir
from patchkeeper.proof.smoke.interpreter import find_python
from patchkeeper.proof.smoke.one_check import run_check
from patchkeeper.proof.smoke.results import ERROR, PASS, CheckResult

PROVEN, FAILED, UNPROVEN, NO_CHECK = "proven", "failed", "unproven", "no-check"


def check_out(repo: Path, tree: str, folder: Path) -> None:
    """TREE's files into FOLDER (made anew), through a scratch index: the install's own
    index, HEAD and work tree are not touched."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    with scratch_index(repo) as index:
        index.read_tree(tree)
        git.run(["checkout-index", "-a", "-f", f"--prefix={folder}/"], repo, env=index.env)


def prove(
    install: Install, settings: Settings, state: PortState, root: Path
) -> tuple[dict[str, str], list[CheckResult], str]:
    """Each kept patch's proof (PROVEN, FAILED, UNPROVEN, NO_CHECK), every check's result,
    and which interpreter ran them (a sentence)."""
    kept = [d for d in state.decisions if d.action != RETIRE]
    names = list(dict.fromkeys(n.removesuffix(".py") for d in kept for n in d.smoke))
    proofs = {d.name: NO_CHECK for d in kept if not d.smoke}
    if not names:
        return proofs, [], "no smoke check names a ported fix"
    python = find_python(install, settings)
    folder = port_dir(install.state_dir) / "tree"
    results: dict[str, CheckResult] = {}
    try:
        check_out(install.path, state.base_tree, folder)
        for name in names:
            path = root / "smoke" / f"{name}.py"
            if not python.found:
                detail = f"could not check: interpreter {python.path} not found ({python.note})"
                results[name] = CheckResult(name, ERROR, 0.0, detail=detail)
                continue
            result = run_check(
                python, folder, path, timeout=settings.smoke_timeout,
                scratch_root=port_dir(install.state_dir) / "smoke",
            )  # fmt: skip
            if result.verdict == PASS and not python.installs_own:
                why = f"could not check: passed under patchkeeper's own {python.path}"
                result = CheckResult(name, ERROR, result.seconds, result.steps, why)
            results[name] = result
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for decision in kept:
        verdicts = [results[n.removesuffix(".py")].verdict for n in decision.smoke]
        if verdicts:
            proofs[decision.name] = (
                PROVEN if all(v == PASS for v in verdicts)
                else FAILED if "fail" in verdicts else UNPROVEN
            )  # fmt: skip
    said = f"with {python.path}" + (f" ({python.note})" if python.note else "")
    return proofs, list(results.values()), said
