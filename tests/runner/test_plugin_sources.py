"""A plugin's modules compile from their sources, whatever bytecode the folder ships."""

from __future__ import annotations

import importlib.util
import marshal
import sys
from collections.abc import Iterator
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from types import ModuleType

import pytest

from plughost_runner.plugins.sources import SourceOnlyLoader, compile_from_source
from tests.shipped_bytecode import ship_bytecode


def _folder(root: Path, *, unchecked_hash: bool) -> Path:
    """A plugin-like package: an entry module, a relative import and a top-level one."""
    folder = root / "plugin"
    (folder / "libs").mkdir(parents=True)
    sources = {
        folder / "plugin.py": "from .helper import HELPER\nENTRY = 'source'\n",
        folder / "helper.py": "HELPER = 'source'\n",
        folder / "libs" / "__init__.py": "",
        folder / "libs" / "tone.py": "TONE = 'source'\n",
    }
    for path, text in sources.items():
        path.write_text(text, encoding="utf-8")
        shipped = text.replace("'source'", "'shipped'")
        ship_bytecode(path, shipped, unchecked_hash=unchecked_hash)
    return folder


def _import(folder: Path, name: str, *, from_source: bool) -> ModuleType:
    entry = folder / "plugin.py"
    loader = SourceOnlyLoader(name, str(entry)) if from_source else None
    spec = importlib.util.spec_from_file_location(
        name, entry, loader=loader, submodule_search_locations=[str(folder)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def clean_imports() -> Iterator[None]:
    path, modules = list(sys.path), set(sys.modules)
    yield
    sys.path[:] = path
    for name in set(sys.modules) - modules:
        del sys.modules[name]


@pytest.mark.parametrize("unchecked_hash", [False, True], ids=["timestamp", "unchecked-hash"])
def test_python_alone_runs_the_shipped_bytecode(
    tmp_path: Path, unchecked_hash: bool, clean_imports: None
) -> None:
    """The fixture is what the next test defends against: without it, the .pyc runs."""
    folder = _folder(tmp_path, unchecked_hash=unchecked_hash)
    module = _import(folder, f"shipped_{unchecked_hash}", from_source=False)
    assert (module.ENTRY, module.HELPER) == ("shipped", "shipped")


@pytest.mark.parametrize("unchecked_hash", [False, True], ids=["timestamp", "unchecked-hash"])
def test_every_module_in_a_plugin_folder_compiles_from_its_source(
    tmp_path: Path, unchecked_hash: bool, clean_imports: None
) -> None:
    folder = _folder(tmp_path, unchecked_hash=unchecked_hash)
    compile_from_source(folder)
    module = _import(folder, f"sourced_{unchecked_hash}", from_source=True)
    assert (module.ENTRY, module.HELPER) == ("source", "source")

    sys.path.insert(0, str(folder))  # as published MaiBot plugins do, to import `libs.x`
    from libs.tone import TONE  # type: ignore[import-not-found]

    assert TONE == "source"


def test_a_source_comes_before_an_extension_module_of_the_same_name(
    tmp_path: Path, clean_imports: None
) -> None:
    """Plain Python tries NAME.cpython-3X-*.so first; here the .py beside it wins."""
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "plugin.py").write_text("from .fast import SPEED\n", encoding="utf-8")
    (folder / "fast.py").write_text("SPEED = 'source'\n", encoding="utf-8")
    # Not a shared object at all: loading it would raise ImportError.
    (folder / f"fast{EXTENSION_SUFFIXES[0]}").write_bytes(b"not an ELF file")
    with pytest.raises(ImportError):
        _import(folder, "extension_first", from_source=False)
    compile_from_source(folder)
    assert _import(folder, "source_first", from_source=True).SPEED == "source"


def test_a_module_with_no_source_still_imports(tmp_path: Path, clean_imports: None) -> None:
    """A lone .pyc contradicts no source: it imports, as under plain Python."""
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "plugin.py").write_text("from .bare import BARE\n", encoding="utf-8")
    code = compile("BARE = 'bytecode only'\n", str(folder / "bare.py"), "exec")
    bare = folder / "bare.pyc"
    header = importlib.util.MAGIC_NUMBER + bytes(12)  # timestamp .pyc: not checked without a .py
    bare.write_bytes(header + marshal.dumps(code))
    compile_from_source(folder)
    assert _import(folder, "lone_pyc", from_source=True).BARE == "bytecode only"
