"""Imports flow one way: runner -> sdk and host -> sdk; the host never imports the runner.

Every ``.py`` file of the three packages is parsed (never imported), and every
``import``/``from ... import`` plus every literal ``importlib.import_module(...)``
or ``__import__(...)`` is checked against the allowed directions.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT_PACKAGES = frozenset({"plughost_sdk", "plughost_runner", "plughost"})


@dataclass(frozen=True)
class Package:
    name: str
    folder: Path
    may_import: frozenset[str]


PACKAGES = [
    Package("plughost_sdk", ROOT / "sdk" / "plughost_sdk", frozenset({"plughost_sdk"})),
    Package(
        "plughost_runner",
        ROOT / "runner" / "plughost_runner",
        frozenset({"plughost_runner", "plughost_sdk"}),
    ),
    # The host starts the runner as ``python -m plughost_runner``; it never imports it.
    Package("plughost", ROOT / "host" / "plughost", frozenset({"plughost", "plughost_sdk"})),
]

# Packages whose modules are still being written: an empty folder is skipped rather than
# failed. Remove a name once its package has modules, so the check cannot pass vacuously.
NOT_YET_WRITTEN: frozenset[str] = frozenset()


def _modules(package: Package) -> list[Path]:
    return sorted(package.folder.rglob("*.py"))


def _imported_names(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Yield (line, absolute module name) for every import in a module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                yield node.lineno, node.module
        elif isinstance(node, ast.Call) and _is_dynamic_import(node.func):
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                yield node.lineno, first.value


def _is_dynamic_import(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id in ("__import__", "import_module")
    return isinstance(func, ast.Attribute) and func.attr == "import_module"


def _violations(package: Package, root: Path = ROOT) -> list[str]:
    found = []
    for path in _modules(package):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, module in _imported_names(tree):
            top = module.split(".", 1)[0]
            if top in PROJECT_PACKAGES and top not in package.may_import:
                found.append(f"{path.relative_to(root)}:{line}: imports {module}")
    return found


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_package_imports_only_in_the_allowed_direction(package: Package) -> None:
    violations = _violations(package)

    assert not violations, (
        f"{package.name} may import only {sorted(package.may_import)}:\n" + "\n".join(violations)
    )


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_package_has_modules_to_check(package: Package) -> None:
    modules = _modules(package)
    if not modules and package.name in NOT_YET_WRITTEN:
        pytest.skip(f"{package.name} has no modules yet")

    assert modules, f"no .py files under {package.folder}; the import check would pass vacuously"


def test_checker_reports_a_forbidden_import_with_file_and_line(tmp_path: Path) -> None:
    folder = tmp_path / "plughost"
    folder.mkdir()
    (folder / "bad.py").write_text(
        "import os\n"
        "from plughost_sdk import Tool\n"
        "from plughost_runner.plugins.loader import load_plugin\n"
        "import importlib\n"
        "importlib.import_module('plughost_runner.plugins.invoker')\n"
        "from . import sibling\n",
        encoding="utf-8",
    )
    package = Package("plughost", folder, frozenset({"plughost", "plughost_sdk"}))

    assert _violations(package, root=tmp_path) == [
        "plughost/bad.py:3: imports plughost_runner.plugins.loader",
        "plughost/bad.py:5: imports plughost_runner.plugins.invoker",
    ]
