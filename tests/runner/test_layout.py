"""The runner's subpackages import one way, and no module imports itself back.

``tests/test_import_directions.py`` pins the three distributions; this pins the
layers inside ``plughost_runner``. Each part lists what it may import; a new
subpackage must be added here with its place, so the tree keeps showing the
architecture. Modules are parsed, never imported, and every import counts,
including those under ``TYPE_CHECKING`` and inside functions.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.import_cycles import import_cycles

PACKAGE = Path(__file__).resolve().parents[2] / "runner" / "plughost_runner"

# part -> the parts it may import (besides itself). A part is a subpackage, "service"
# (service.py, RunnerService made of the parts below it), or "top" (the entry points:
# plughost_runner/__init__.py, __main__.py and forkserver.py).
ALLOWED: dict[str, frozenset[str]] = {
    "sandbox": frozenset(),
    "process": frozenset(),
    "maibot": frozenset({"process"}),
    "plugins": frozenset({"process", "maibot"}),
    "link": frozenset({"process", "maibot", "plugins"}),
    "service": frozenset({"process", "maibot", "plugins", "link"}),
    "remote": frozenset({"process", "maibot", "plugins", "link", "service"}),
    "rehearsal": frozenset({"sandbox", "process", "maibot", "plugins"}),
    "top": frozenset({"sandbox", "process", "maibot", "plugins", "link", "service", "rehearsal"}),
}
TOP_MODULES = frozenset({"__init__", "__main__", "forkserver"})


def _part_of_module(dotted: str) -> str:
    """The part an absolute ``plughost_runner...`` module name belongs to."""
    pieces = dotted.split(".")
    if len(pieces) == 1 or pieces[1] in TOP_MODULES:
        return "top"
    return pieces[1]


def _part_of_file(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    if len(relative.parts) > 1:
        return relative.parts[0]
    return _part_of_module("plughost_runner." + relative.stem)


def _module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _runner_imports(
    tree: ast.AST, modules: frozenset[str] = frozenset()
) -> Iterator[tuple[int, str]]:
    """Yield (line, module) for every ``plughost_runner`` import.

    ``from plughost_runner.x import y`` names the module ``plughost_runner.x.y`` when
    there is one (a submodule; importing it runs the package's ``__init__`` as every
    submodule import does), else ``plughost_runner.x``.
    """
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "plughost_runner":
                    yield node.lineno, alias.name
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and node.module.split(".")[0] == "plughost_runner"
        ):
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                yield node.lineno, submodule if submodule in modules else node.module


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_the_runner_has_subpackages() -> None:
    parts = {_part_of_file(path) for path in _modules()}

    assert {"process", "maibot", "plugins", "link", "remote", "sandbox"} <= parts


def test_every_subpackage_has_a_place_in_the_layers() -> None:
    parts = {_part_of_file(path) for path in _modules()}

    assert parts - set(ALLOWED) == set(), "add the new subpackage to ALLOWED with its imports"


def test_every_subpackage_says_what_lives_there_and_what_it_may_import() -> None:
    for init in PACKAGE.glob("*/__init__.py"):
        if init.parent.name == "sandbox":
            continue  # a leaf: it imports nothing of the runner, pinned by ALLOWED
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))

        assert doc, f"{init} has no docstring"
        assert "May import" in doc, f"{init}'s docstring does not say what it may import"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_imports_only_lower_layers(path: Path) -> None:
    part = _part_of_file(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    wrong = [
        f"line {line}: {module}"
        for line, module in _runner_imports(tree)
        if (other := _part_of_module(module)) != part and other not in ALLOWED.get(part, set())
    ]

    assert not wrong, f"{part} may import only {sorted(ALLOWED.get(part, set()))}: {wrong}"


def test_no_module_imports_itself_back() -> None:
    names = frozenset(_module_name(path) for path in _modules())
    graph: dict[str, set[str]] = {}
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[_module_name(path)] = {module for _, module in _runner_imports(tree, names)}
    cycles = import_cycles(graph)

    assert not cycles, "import cycles:\n" + "\n".join(cycles)
