"""An API whose own parameters are named ``name``, ``timeout`` or ``args``.

Differential: a MaiBot plugin calls such an API through ``ctx.api.call`` under
the real maibot-plugin-sdk, with MaiBot's host answering ``api.call`` as it does
(the API's handler called with the call's ``args``, the value under
``result``), and under plughost; the answers must be the same.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import maibot_sdk.context as real_context
import pytest

from tests.conftest import TEST_PLUGINS, HostFactory
from tests.maibot_real import import_plugin

FIXTURE = TEST_PLUGINS / "maibot" / "timer_board"


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Path:
    """A copy of the fixture, outside the repository."""
    return Path(shutil.copytree(FIXTURE, tmp_path / "plugins" / "timer_board"))


class MaiBotApiHost:
    """MaiBot's host answering ``api.call`` for one plugin's own APIs; keeps what it was sent."""

    def __init__(self, plugin: Any) -> None:
        self.plugin = plugin
        self.sent: list[dict[str, Any]] = []

    async def rpc_call(
        self, method: str, plugin_id: str = "", payload: Any = None, **_: Any
    ) -> Any:
        assert method == "cap.call" and payload["capability"] == "api.call"
        args = payload["args"]
        self.sent.append(args)
        apis = {c["name"]: c for c in self.plugin.get_components() if c["type"] == "API"}
        handler = getattr(self.plugin, apis[args["api_name"]]["metadata"]["handler_name"])
        return {"success": True, "result": await handler(**args["args"])}


async def test_ctx_api_call_reaches_an_api_with_name_and_timeout_parameters_as_under_maibot(
    make_host: HostFactory, plugin_dir: Path, tmp_path: Path
) -> None:
    real = import_plugin(Path(shutil.copytree(FIXTURE, tmp_path / "real")), "real_timer_board")
    plugin = real.create_plugin()
    maibot = MaiBotApiHost(plugin)
    plugin._set_context(real_context.PluginContext("community.timer-board", maibot.rpc_call))
    await plugin.on_load()
    expected = await plugin.tea_timer()

    async with make_host([plugin_dir]) as host:
        result = await host.invoke("tea_timer")

    assert maibot.sent == [
        {
            "api_name": "set_timer",
            "version": "",
            "args": {"name": "泡茶", "timeout": 180, "args": ["绿茶"]},
        }
    ]
    assert result.success, result.error_message
    assert result.content == expected["content"] == "泡茶 180s ['绿茶']"
