"""Import a MaiBot plugin folder in the test process, as MaiBot's runner does."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def import_plugin(folder: Path, name: str) -> ModuleType:
    """Import ``folder``'s plugin.py as package ``name``, then forget the modules it imported.

    A plugin may put its folder on ``sys.path`` and import its own modules by
    top-level name (``config``); those modules and the path entry are dropped
    afterwards, so the next import of a same-named module comes from its own
    folder. Whether ``maibot_sdk`` is the real one or plughost's depends on
    whether ``folder`` is registered with :mod:`plughost_runner.maibot.imports`.
    """
    spec = importlib.util.spec_from_file_location(
        name, folder / "plugin.py", submodule_search_locations=[str(folder)]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"{folder / 'plugin.py'} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    saved_path = list(sys.path)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved_path
        for key, loaded in list(sys.modules.items()):
            file = getattr(loaded, "__file__", None) or ""
            if key != name and Path(file).is_relative_to(folder):
                del sys.modules[key]
    return module
