"""The house rules of docs/architecture.md, read from the code's own imports: data flows one
way between the parts, no module imports itself back through others, and no room is too big.

Every import counts, the ones inside functions too: an import put off to run time to get round
a circle is still the circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "patchkeeper"

# Each part, with the rank it stands at: a module may import its own part and parts of a lower
# rank, never a part of its rank or above. The practice upstream is data, not code of ours.
RANKS = {
    "model": 0,
    "patchset": 1,
    "install": 2,
    "leftovers": 3,
    "engine": 3,
    "proof": 4,
    "update": 5,
    "port": 5,  # a peer of update: neither imports the other
    "report": 6,
    "fleet": 7,
    "demo": 7,
    "commands": 8,
    "cli": 9,
    "__main__": 10,
}
MAX_MODULE_LINES = 400
MAX_CLASS_LINES = 150


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[:2] == ("demo", "upstream"):
            continue
        if relative.as_posix() == "_version.py":  # written by setuptools-scm at build time
            continue
        parts = relative.with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(("patchkeeper", *parts))] = path
    return found


MODULES = _modules()


def _imports(path: Path) -> set[str]:
    """The modules of this package that PATH imports, anywhere in it."""
    named: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] != "patchkeeper":
                continue
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                named.add(submodule if submodule in MODULES else node.module)
        elif isinstance(node, ast.Import):
            named.update(a.name for a in node.names if a.name.split(".")[0] == "patchkeeper")
    return {name for name in named if name in MODULES}


GRAPH = {module: _imports(path) for module, path in MODULES.items()}


def _part(module: str) -> str | None:
    """The part MODULE belongs to; None for the package itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_module_stands_in_a_known_part() -> None:
    unknown = sorted(m for m in MODULES if _part(m) is not None and _part(m) not in RANKS)
    assert unknown == [], "give each new part a rank in RANKS (and docs/architecture.md)"


def test_data_flows_one_way_between_the_parts() -> None:
    upward = []
    for module, imported in GRAPH.items():
        here = _part(module)
        for target in imported:
            there = _part(target)
            if here is None or there is None or there == here:
                continue
            if RANKS[there] >= RANKS[here]:
                upward.append(f"{module} -> {target}")
    assert sorted(upward) == []


def test_no_module_imports_itself_back() -> None:
    """No circle of imports, however long, between the modules of the package."""
    circles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(GRAPH[module]):
            if target == module or _part(target) is None:
                continue
            if state.get(target) == 1:
                circles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])
    assert [" -> ".join(circle) for circle in circles] == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_room_is_too_big(module: str) -> None:
    source = MODULES[module].read_text()
    lines = source.count("\n")
    assert lines <= MAX_MODULE_LINES, f"{module}: {lines} lines; split it along its seams"
    big = [
        f"{node.name}: {node.end_lineno - node.lineno + 1} lines"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES
    ]
    assert big == [], f"{module}: a class this big does several jobs"


def _is_dataclass(node: ast.ClassDef) -> bool:
    return any(
        (isinstance(d, ast.Name) and d.id == "dataclass")
        or (isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "dataclass")
        for d in node.decorator_list
    )


def test_every_dataclass_says_what_it_is() -> None:
    """A docstring on each: the reader's first line, and at start-up `dataclass` makes one
    from `inspect.signature` for a class without (up to a millisecond a class, at import)."""
    silent = [
        f"{module}.{node.name}"
        for module, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef) and _is_dataclass(node) and not ast.get_docstring(node)
    ]
    assert silent == []


# A renderer of commands/ waiting for its move to report/, with the reason it waits.
RENDERERS_STILL_IN_COMMANDS: dict[str, str] = {}


def _renderers(path: Path) -> list[str]:
    """What in PATH lays out a report: a top-level function named `render`, `render_...` or
    `..._json` / `..._lines` (leading underscore or not), or a call of `json.dumps`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.col_offset == 0:
            name = node.name.lstrip("_")
            if name == "render" or name.startswith("render_") or name.endswith(("_json", "_lines")):
                found.append(f"def {node.name}")
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "json.dumps":
            found.append(f"json.dumps at line {node.lineno}")
    return found


def test_commands_render_through_report() -> None:
    """Every report a command prints is laid out in report/ (docs/architecture.md: commands/
    parses options, calls the parts below and renders through report/)."""
    in_commands = {
        module: _renderers(path)
        for module, path in MODULES.items()
        if _part(module) == "commands" and module not in RENDERERS_STILL_IN_COMMANDS
    }
    assert {module: found for module, found in in_commands.items() if found} == {}
    stale = [m for m in RENDERERS_STILL_IN_COMMANDS if not _renderers(MODULES[m])]
    assert stale == [], "no renderer left there: take it off RENDERERS_STILL_IN_COMMANDS"


# Inside install/: each sub-package with its rank, as for the parts above (the modules directly
# in install/, `workspace` and `set_choice`, are its top: what a command opens).
INSTALL_RANKS = {
    "system": 0,
    "records": 1,
    "plumbing": 1,  # a peer of records: neither imports the other
    "processes": 2,
    "checkout": 3,
    "writer": 4,
    "locks": 5,
    None: 6,
}


def _install_room(module: str) -> str | None:
    """The sub-package of install/ MODULE stands in; None for a module directly in install/."""
    parts = module.split(".")
    return parts[2] if len(parts) > 3 else None


def test_install_is_layered_by_idea() -> None:
    """No arrow runs up or sideways between the rooms of install/ (docs/architecture.md)."""
    inside = [m for m in MODULES if m.startswith("patchkeeper.install.")]
    unknown = sorted(m for m in inside if _install_room(m) not in INSTALL_RANKS)
    assert unknown == [], "give a new sub-package of install/ a rank in INSTALL_RANKS"
    upward = [
        f"{module} -> {target}"
        for module in inside
        for target in GRAPH[module]
        if target.startswith("patchkeeper.install.")
        and _install_room(target) != _install_room(module)
        and INSTALL_RANKS[_install_room(target)] >= INSTALL_RANKS[_install_room(module)]
    ]
    assert sorted(upward) == []
