"""How serve starts: its own tools registered beside the plugins, the first call's imports after."""

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
    """Holds the import of one module until released, then fails it."""

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
            raise ImportError(f"{fullname} held by the test")
        return None


async def test_the_start_does_not_wait_for_what_the_first_call_imports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    held = _HeldImport("jsonschema")
    monkeypatch.delitem(sys.modules, "jsonschema", raising=False)
    monkeypatch.setattr(sys, "meta_path", [held, *sys.meta_path])
    config = ServeConfig.model_validate({"search": {"semantic": "off"}})
    host = PluginHost([])
    try:
        async with asyncio.timeout(30):
            preloading = await start_with_upstream(host, config)
            entered = await asyncio.to_thread(held.entered.wait, 30)
        still_importing = not preloading.done()
        held.release.set()
        await asyncio.wait([preloading])
    finally:
        held.release.set()
        await host.aclose()

    assert entered and still_importing
    assert host.search is not None  # tool_search was registered without waiting for it
    assert isinstance(preloading.exception(), ImportError)
