"""Shared set-up for the sandbox tests: a hostile plugin next to a neighbour, in real runners."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from plughost.host import PluginHost
from tests.conftest import TEST_PLUGINS, fast_settings

HOSTILE = TEST_PLUGINS / "hostile_intruder"
NEIGHBOUR = TEST_PLUGINS / "echo"
NEIGHBOUR_ID = "tests.echo"
NEIGHBOUR_SECRET = "neighbour-secret-7d1f"


@dataclass
class Attack:
    """The hostile plugin's view of the world, and the tool that carries out an attempt."""

    host: PluginHost
    plugins: Path
    data: Path

    @property
    def intruder(self) -> Path:
        return self.plugins / "hostile_intruder"

    @property
    def neighbour(self) -> Path:
        return self.plugins / "echo"

    async def attempt(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """Run one hostile tool; return its verdict (``allowed`` and ``detail``)."""
        result = await self.host.invoke(tool, arguments)
        assert result.success, result.error_message
        assert isinstance(result.structured_content, dict)
        return result.structured_content


def plant_plugins(root: Path) -> Path:
    """Copy the hostile plugin and its neighbour (with a secret in its config) under ``root``."""
    plugins = root / "plugins"
    shutil.copytree(HOSTILE, plugins / "hostile_intruder")
    shutil.copytree(NEIGHBOUR, plugins / "echo")
    config = plugins / "echo" / "config.toml"
    config.write_text(f'api_key = "{NEIGHBOUR_SECRET}"\n' + config.read_text())
    return plugins


@contextlib.asynccontextmanager
async def planted_host(root: Path) -> AsyncIterator[Attack]:
    """A host with the test settings serving the planted intruder and neighbour under ``root``."""
    plugins = plant_plugins(root)
    settings = fast_settings(root)
    async with PluginHost(
        [plugins / "hostile_intruder", plugins / "echo"], settings=settings
    ) as host:
        yield Attack(host, plugins, settings.data_dir)


def require(host: PluginHost, *protections: str) -> None:
    """Skip, saying why, when this kernel does not give runners ``protections``."""
    assert host.sandbox is not None
    for protection in protections:
        if protection not in host.sandbox.active:
            reason = host.sandbox.missing.get(protection, "not offered")
            pytest.skip(f"this kernel gives runners no {protection}: {reason}")
