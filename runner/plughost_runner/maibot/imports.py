"""``import maibot_sdk`` inside a MaiBot plugin resolves to ``plughost_sdk.maibot``.

The mapping is keyed on *who imports*, and a module is a MaiBot plugin's when
its file lies inside the folder of a plugin registered here (the plugins whose
manifest targets MaiBot). That covers the modules the loader imports under the
package name it gave the plugin, and also the ones a plugin imports by a
top-level name after putting its own folder on ``sys.path`` (``from config
import X``, ``from libs.util import Y``), as published MaiBot plugins do. Code
with no file (a string the plugin executes) counts when its ``__name__`` is
under the plugin's package. Paths are compared resolved and part by part, so a
sibling folder whose name merely starts the same (``weather`` and
``weather_extra``) is not inside.

- ``maibot_sdk`` and ``maibot_sdk.<module>`` become ``plughost_sdk.maibot`` and
  ``plughost_sdk.maibot.<module>``; nothing is put in ``sys.modules`` under the
  ``maibot_sdk`` name, so a real ``maibot_sdk`` installed beside plughost, and
  every other plugin in the runner, are left alone.
- ``maibot_sdk.compat`` (SDK 1.x's legacy layer) is refused with a message.
- ``src`` / ``src.*`` that cannot be imported (MaiBot's own host code) fail
  with a message saying the plugin depends on MaiBot's host.

Three ways in are mapped: the ``import`` statement (``builtins.__import__``,
which receives the importer's globals), ``__import__(...)`` called by hand
(the caller's frame), and ``importlib.import_module("maibot_sdk...")`` (the
caller's frame). The wrappers are installed the first time a MaiBot plugin is
loaded, and only then.
"""

from __future__ import annotations

import builtins
import importlib
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from plughost_sdk.maibot.plugin import MaiBotPlugin

__all__ = ["as_maibot_plugin", "install", "register_package", "unregister_package"]

SDK_NAME = "maibot_sdk"
TARGET = "plughost_sdk.maibot"

_packages: dict[str, tuple[str, ...]] = {}
"""Registered package name -> the plugin folder, as absolute and as resolved path."""
_lock = threading.Lock()
_original: Callable[..., ModuleType] | None = None
_original_import_module: Callable[..., ModuleType] | None = None
_IMPORT_MODULE = importlib.import_module


def as_maibot_plugin(instance: object) -> MaiBotPlugin | None:
    """``instance`` if it is a MaiBotPlugin, else None, without importing the MaiBot layer.

    A runner with no MaiBot plugin never imports it: an instance of that class can
    only exist once its module has been imported.
    """
    module = sys.modules.get("plughost_sdk.maibot.plugin")
    if module is not None and isinstance(instance, module.MaiBotPlugin):
        return cast("MaiBotPlugin", instance)
    return None


def register_package(package: str, folder: str | os.PathLike[str]) -> None:
    """Map ``maibot_sdk`` for the modules whose files lie in ``folder``.

    Args:
        package: the top-level name the loader gave the plugin's ``plugin.py``;
            it identifies the registration (``unregister_package``) and covers
            code that has no file.
        folder: the plugin's folder.
    """
    install()
    absolute = os.path.abspath(folder)
    _packages[package] = tuple(dict.fromkeys((absolute, os.path.realpath(absolute))))


def unregister_package(package: str) -> None:
    """Stop mapping for ``package`` (the plugin was unloaded)."""
    _packages.pop(package, None)


def install() -> None:
    """Put the importer-aware ``__import__`` and ``import_module`` in place (idempotent)."""
    global _original, _original_import_module
    with _lock:
        if _original is None:
            _original = builtins.__import__
            builtins.__import__ = _import
        if _original_import_module is None:
            _original_import_module = importlib.import_module
            importlib.import_module = _import_module


def _import(
    name: str,
    globals: Mapping[str, Any] | None = None,
    locals: Mapping[str, Any] | None = None,
    fromlist: Sequence[str] | None = (),
    level: int = 0,
) -> ModuleType:
    original = _original or importlib.__import__
    if level == 0 and _is_candidate(name):
        importer = globals if globals is not None else sys._getframe(1).f_globals
        if _from_maibot(importer):
            if _is_sdk(name):
                module = _mapped(name, fromlist or (), original)
                # "import maibot_sdk.x" binds the top package; "from maibot_sdk.x import y" x.
                return module if fromlist else sys.modules[TARGET]
            return _host_internal(name, importer, locals, fromlist, original)
    return original(name, globals, locals, fromlist, level)


def _import_module(name: str, package: str | None = None) -> ModuleType:
    original = _original_import_module or _IMPORT_MODULE
    if _is_sdk(name) and _from_maibot(sys._getframe(1).f_globals):
        return _mapped(name, (), lambda target, *_: original(target))
    return original(name, package)


def _is_candidate(name: str) -> bool:
    head = name.partition(".")[0]
    return head in (SDK_NAME, "src")


def _is_sdk(name: str) -> bool:
    return name == SDK_NAME or name.startswith(SDK_NAME + ".")


def _from_maibot(globals: Mapping[str, Any]) -> bool:
    """Whether the module with these globals is a registered MaiBot plugin's own."""
    if not _packages:
        return False
    file = globals.get("__file__")
    if isinstance(file, str) and file:
        return _inside_a_plugin(file)
    importer = str(globals.get("__name__") or "")
    return importer.partition(".")[0] in _packages


def _inside_a_plugin(file: str) -> bool:
    absolute = os.path.abspath(file)
    paths = dict.fromkeys((absolute, os.path.realpath(absolute)))
    for folders in list(_packages.values()):
        for folder in folders:
            if any(_within(path, folder) for path in paths):
                return True
    return False


def _within(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath((path, folder)) == folder
    except ValueError:  # different drives
        return False


def _mapped(name: str, fromlist: Sequence[str], load: Callable[..., ModuleType]) -> ModuleType:
    """The ``plughost_sdk.maibot`` module standing for ``maibot_sdk`` module ``name``."""
    tail = name[len(SDK_NAME) :]
    if tail == ".compat" or tail.startswith(".compat."):
        raise ImportError(
            f"{name} is MaiBot SDK 1.x's compatibility layer for old plugin APIs; plughost "
            "supports the SDK 2.x API only (MaiBotPlugin and its decorators)",
            name=name,
        )
    target = TARGET + tail
    try:
        load(target, None, None, fromlist, 0)
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.startswith(TARGET):
            raise ModuleNotFoundError(
                f"{name} is not part of the MaiBot SDK 2.16 API that plughost provides",
                name=name,
            ) from None
        raise
    return sys.modules[target]


def _host_internal(
    name: str,
    globals: Mapping[str, Any],
    locals: Mapping[str, Any] | None,
    fromlist: Sequence[str] | None,
    original: Callable[..., ModuleType],
) -> ModuleType:
    try:
        return original(name, globals, locals, fromlist, 0)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] != "src":
            raise
        raise ModuleNotFoundError(
            f"the plugin imports {name}, which is MaiBot's own host code: it exists only "
            "inside MaiBot's process, so this plugin depends on MaiBot itself and cannot run "
            "under plughost unless it uses the SDK (self.ctx...) instead",
            name=name,
        ) from None
