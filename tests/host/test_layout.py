"""The host's subpackages import one way, and no module imports itself back.

``tests/test_import_directions.py`` pins the three distributions; this pins the
layers inside ``plughost``. Each part lists what it may import; a new subpackage
must be added here with its place, so the tree keeps showing the architecture.
Modules are parsed, never imported, and every import counts, including those
under ``TYPE_CHECKING`` and inside functions.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.import_cycles import import_cycles

PACKAGE = Path(__file__).resolve().parents[2] / "host" / "plughost"

LEAVES = frozenset(
    {
        "settings",
        "events",
        "redaction",
        "secret_values",
        "monitor",
        "tracing",
        "destinations",
        "egress",
        "egress_ports",
        "own_services",
    }
)
# part -> the parts it may import (besides itself). A part is a subpackage, a leaf
# module, or "top" (the façade: plughost/__init__.py, host.py and the modules it is
# made of, reloader.py).
ALLOWED: dict[str, frozenset[str]] = {
    **{leaf: LEAVES for leaf in LEAVES},
    "tools": LEAVES,
    "search": LEAVES | {"tools"},
    "mcp": LEAVES | {"tools"},
    "plugins": LEAVES | {"tools"},
    "runners": LEAVES | {"tools", "plugins"},
    "remote": LEAVES | {"tools", "plugins", "runners"},
    "dispatch": LEAVES | {"tools", "plugins", "runners"},
    "top": LEAVES | {"tools", "search", "mcp", "plugins", "runners", "remote", "dispatch"},
    "web": LEAVES | {"tools", "search", "mcp", "plugins", "runners", "remote", "dispatch", "top"},
    "cli": LEAVES
    | {"tools", "search", "mcp", "plugins", "runners", "remote", "dispatch", "top", "web"},
}
# A plugin's own packages: read from its folder, installed before its runner starts.
ALLOWED["dependencies"] = LEAVES | {"plugins"}
for _part in ("top", "web", "cli"):
    ALLOWED[_part] |= {"dependencies"}
TOP_MODULES = frozenset(
    {
        "__init__",
        "chat",
        "host",
        "host_capabilities",
        "reloader",
        "startup",
        "status",
    }
)


def _part_of_module(dotted: str) -> str:
    """The part an absolute ``plughost...`` module name belongs to."""
    pieces = dotted.split(".")
    if len(pieces) == 1 or pieces[1] in TOP_MODULES:
        return "top"
    if pieces[1] == "__main__":
        return "cli"
    return pieces[1]


def _part_of_file(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    if len(relative.parts) > 1:
        return relative.parts[0]
    return _part_of_module("plughost." + relative.stem)


def _module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _plughost_imports(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "plughost":
                    yield node.lineno, alias.name
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and node.module.split(".")[0] == "plughost"
        ):
            yield node.lineno, node.module


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_subpackage_has_a_place_in_the_layers() -> None:
    parts = {_part_of_file(path) for path in _modules()}

    assert parts - set(ALLOWED) == set(), "add the new subpackage to ALLOWED with its imports"


def test_every_subpackage_says_what_lives_there_and_what_it_may_import() -> None:
    for init in PACKAGE.glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))

        assert doc, f"{init} has no docstring"
        assert "May import" in doc, f"{init}'s docstring does not say what it may import"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_imports_only_lower_layers(path: Path) -> None:
    part = _part_of_file(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    wrong = [
        f"line {line}: {module}"
        for line, module in _plughost_imports(tree)
        if (other := _part_of_module(module)) != part and other not in ALLOWED.get(part, set())
    ]

    assert not wrong, f"{part} may import only {sorted(ALLOWED.get(part, set()))}: {wrong}"


def test_runners_on_other_machines_live_apart_and_the_hosts_own_never_import_them() -> None:
    assert (PACKAGE / "remote" / "__init__.py").is_file()
    assert sorted(p.name for p in (PACKAGE / "runners").glob("remote*.py")) == []
    assert "remote" not in ALLOWED["runners"]
    assert "runners" in ALLOWED["remote"]


def test_no_module_imports_itself_back() -> None:
    graph: dict[str, set[str]] = {}
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[_module_name(path)] = {module for _, module in _plughost_imports(tree)}
    cycles = import_cycles(graph)

    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_cycle_check_sees_a_cycle_and_nothing_else() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

    assert import_cycles(graph) == ["a -> b -> c -> a", "b -> c -> a -> b", "c -> a -> b -> c"]
    assert import_cycles({"a": {"b"}, "b": set()}) == []
