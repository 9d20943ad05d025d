"""plughost runner: the child process that loads plugins and serves their tools.

Start it with ``python -m plughost_runner``; the host does this for you. The
package exposes no API to plugin authors, who import only ``plughost_sdk``.

The names below are imported on first use, so that ``python -m
plughost_runner.sandbox`` (the host's probe) starts without pyzmq and pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plughost_runner.loader import LoadedPlugin, LoadFailure, PluginSpec
    from plughost_runner.service import RunnerService

__version__ = "0.1.0"

__all__ = ["LoadFailure", "LoadedPlugin", "PluginSpec", "RunnerService", "__version__"]

_LAZY = {
    "LoadFailure": "plughost_runner.loader",
    "LoadedPlugin": "plughost_runner.loader",
    "PluginSpec": "plughost_runner.loader",
    "RunnerService": "plughost_runner.service",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'plughost_runner' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
