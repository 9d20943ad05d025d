"""The ``plugin_harness`` pytest fixture, registered through the ``pytest11`` entry point.

pytest loads this module by itself once plughost-sdk is installed; a plugin's
tests need no conftest.py. The fixture makes :class:`PluginTestHarness`
objects whose data and temp directories live under the test's ``tmp_path``.
Called without a folder, it tests the plugin the test file belongs to: the
nearest folder above the test file that holds ``_manifest.json``::

    async def test_greet_says_hello(plugin_harness) -> None:
        async with plugin_harness() as harness:
            result = await harness.call("greet", {"person": "Ada"})
        assert result.content == "Hello, Ada!"

The fixture is synchronous on purpose: it works under any async test runner
(pytest-asyncio in strict or auto mode, anyio), because the harness itself is
entered with ``async with`` inside the test.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plughost_sdk.manifest import MANIFEST_FILE
from plughost_sdk.testing import PluginTestHarness

__all__ = ["HarnessFactory", "plugin_harness"]

HarnessFactory = Callable[..., PluginTestHarness]
"""``plugin_harness(plugin_dir=None, **options)``: options as for PluginTestHarness."""


@pytest.fixture
def plugin_harness(request: pytest.FixtureRequest, tmp_path: Path) -> HarnessFactory:
    """Make PluginTestHarness objects for this test (enter each with ``async with``)."""
    test_file = Path(request.path)

    def make(plugin_dir: str | Path | None = None, **options: Any) -> PluginTestHarness:
        folder = Path(plugin_dir) if plugin_dir is not None else plugin_folder_of(test_file)
        options.setdefault("work_dir", tmp_path / "plughost")
        return PluginTestHarness(folder, **options)

    return make


def plugin_folder_of(test_file: Path) -> Path:
    """The nearest folder above ``test_file`` that holds a ``_manifest.json``.

    Raises:
        ValueError: no folder above it does; pass the plugin folder explicitly.
    """
    for folder in test_file.resolve().parents:
        if (folder / MANIFEST_FILE).is_file():
            return folder
    raise ValueError(
        f"{test_file} is not inside a plugin folder (no folder above it holds "
        f"{MANIFEST_FILE}); pass the folder: plugin_harness('path/to/plugin')"
    )
