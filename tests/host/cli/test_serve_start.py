"""How serve starts: what its first call and its own tools import, imported in a worker."""

from __future__ import annotations

import asyncio
import importlib.abc
import sys
import threading
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

import pytest

from plughost.cli.serve_config import ServeConfig
from plughost.cli.serve_start import start_with_upstream
from plughost.host import PluginHost


class _HeldImport(importlib.abc.MetaPathFinder):
    """Holds the import of one module until released, then lets it go on."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.entered = threading.Event()
        self.release = threading.Event()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname == self.name:
            self.entered.set()
            self.release.wait(30)
        return None


async def test_the_start_imports_what_the_first_call_needs_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    held = _HeldImport("jsonschema")
    monkeypatch.delitem(sys.modules, "jsonschema", raising=False)
    monkeypatch.setattr(sys, "meta_path", [held, *sys.meta_path])
    config = ServeConfig.model_validate({"search": {"semantic": "off"}})
    host = PluginHost([])
    starting = asyncio.ensure_future(start_with_upstream(host, config))
    try:
        # The loop runs this while the import is held: it is not the loop that imports.
        entered = await asyncio.wait_for(asyncio.to_thread(held.entered.wait, 30), 30)
        waited_for_it = not starting.done()
        held.release.set()
        async with asyncio.timeout(30):
            await starting
    finally:
        held.release.set()
        await host.aclose()

    assert entered and waited_for_it
    assert host.search is not None  # tool_search registered once the worker was done
