"""``import maibot_sdk`` inside a MaiBot plugin resolves to ``plughost_sdk.maibot``.

The mapping is keyed on *who imports*: an ``import`` statement passes the
importing module's globals to ``__import__``, and a plugin's modules all live
under the package name the loader gave it. Only packages registered here (the
plugins whose manifest targets MaiBot) see the mapping:

- ``maibot_sdk`` and ``maibot_sdk.<module>`` become ``plughost_sdk.maibot`` and
  ``plughost_sdk.maibot.<module>``; nothing is put in ``sys.modules`` under the
  ``maibot_sdk`` name, so a real ``maibot_sdk`` installed beside plughost, and
  every other plugin in the runner, are left alone.
- ``maibot_sdk.compat`` (SDK 1.x's legacy layer) is refused with a message.
- ``src`` / ``src.*`` that cannot be imported (MaiBot's own host code) fail
  with a message saying the plugin depends on MaiBot's host.

``importlib.import_module("maibot_sdk")`` passes no importer and is not mapped.
The wrapper is installed the first time a MaiBot plugin is loaded, and only then.
"""

from __future__ import annotations

import builtins
import importlib
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

_packages: set[str] = set()
_lock = threading.Lock()
_original: Callable[..., ModuleType] | None = None


def as_maibot_plugin(instance: object) -> MaiBotPlugin | None:
    """``instance`` if it is a MaiBotPlugin, else None, without importing the MaiBot layer.

    A runner with no MaiBot plugin never imports it: an instance of that class can
    only exist once its module has been imported.
    """
    module = sys.modules.get("plughost_sdk.maibot.plugin")
    if module is not None and isinstance(instance, module.MaiBotPlugin):
        return cast("MaiBotPlugin", instance)
    return None


def register_package(package: str) -> None:
    """Map ``maibot_sdk`` for every module of ``package`` (a plugin's top-level name)."""
    install()
    _packages.add(package)


def unregister_package(package: str) -> None:
    """Stop mapping for ``package`` (the plugin was unloaded)."""
    _packages.discard(package)


def install() -> None:
    """Put the importer-aware ``__import__`` in place (idempotent)."""
    global _original
    with _lock:
        if _original is None:
            _original = builtins.__import__
            builtins.__import__ = _import


def _import(
    name: str,
    globals: Mapping[str, Any] | None = None,
    locals: Mapping[str, Any] | None = None,
    fromlist: Sequence[str] | None = (),
    level: int = 0,
) -> ModuleType:
    original = _original or importlib.__import__
    if level == 0 and globals is not None and _is_candidate(name) and _from_maibot(globals):
        if name == SDK_NAME or name.startswith(SDK_NAME + "."):
            return _mapped(name, fromlist, original)
        return _host_internal(name, globals, locals, fromlist, original)
    return original(name, globals, locals, fromlist, level)


def _is_candidate(name: str) -> bool:
    head = name.partition(".")[0]
    return head in (SDK_NAME, "src")


def _from_maibot(globals: Mapping[str, Any]) -> bool:
    importer = str(globals.get("__name__") or "")
    return importer.partition(".")[0] in _packages


def _mapped(
    name: str, fromlist: Sequence[str] | None, original: Callable[..., ModuleType]
) -> ModuleType:
    tail = name[len(SDK_NAME) :]
    if tail == ".compat" or tail.startswith(".compat."):
        raise ImportError(
            f"{name} is MaiBot SDK 1.x's compatibility layer for old plugin APIs; plughost "
            "supports the SDK 2.x API only (MaiBotPlugin and its decorators)",
            name=name,
        )
    target = TARGET + tail
    try:
        module = original(target, None, None, fromlist or (), 0)
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.startswith(TARGET):
            raise ModuleNotFoundError(
                f"{name} is not part of the MaiBot SDK 2.16 API that plughost provides",
                name=name,
            ) from None
        raise
    # "import maibot_sdk.types" binds the top package; "from maibot_sdk.x import y" the module.
    return module if fromlist else sys.modules[TARGET]


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
