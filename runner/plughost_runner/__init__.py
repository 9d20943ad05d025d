"""plughost runner: the child process that loads plugins and serves their tools.

Start it with ``python -m plughost_runner``; the host does this for you. The
package exposes no API to plugin authors, who import only ``plughost_sdk``.

The package is laid out by what each part holds; each subpackage's docstring
says what lives there and what it may import (lowest first)::

    sandbox/     the sandbox a runner (or an MCP server) enters: namespaces,
                 Landlock, seccomp, egress; the host's probe (``-m plughost_runner.sandbox``)
    process/     the process itself: credentials, lifeline, limits, heap, captured output
    maibot/      the MaiBot compatibility layer: ``maibot_sdk`` imports, plugin set-up, config
    plugins/     loading and calling plugins: loader, invoker, components
    link/        the link to the host: socket, session, pulse, bridge, other requests
    service.py   RunnerService, the runner's side of the protocol, made of the above
    remote/      remote mode: ``plughost-runner``, a runner joining a host over TCP
    rehearsal/   a runner's start rehearsed once in the fork server, so runners start warm
    __main__.py  ``python -m plughost_runner``, the entry point the host starts;
    forkserver.py  ``python -m plughost_runner.forkserver``, which forks runners

The names below are imported on first use, so that ``python -m
plughost_runner.sandbox`` (the host's probe) starts without pyzmq and pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plughost_runner.plugins.loader import LoadedPlugin, LoadFailure, PluginSpec
    from plughost_runner.service import RunnerService

__version__ = "0.1.0"

__all__ = ["LoadFailure", "LoadedPlugin", "PluginSpec", "RunnerService", "__version__"]

_LAZY = {
    "LoadFailure": "plughost_runner.plugins.loader",
    "LoadedPlugin": "plughost_runner.plugins.loader",
    "PluginSpec": "plughost_runner.plugins.loader",
    "RunnerService": "plughost_runner.service",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'plughost_runner' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
