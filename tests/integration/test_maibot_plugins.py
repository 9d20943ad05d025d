"""Plugins written for MaiBot's SDK 2.x, unmodified, in real runners with a MaiBot-like host."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from plughost_sdk.models import ToolExecutionContext
from tests.conftest import TEST_PLUGINS, HostFactory
from tests.maibot_host import MaiBotHost

MAIBOT_PLUGINS = TEST_PLUGINS / "maibot"
GROUP_CHAT = ToolExecutionContext(stream_id="qq:123", is_group_chat=True, group_id="123")


@pytest.fixture
def maibot_dir(tmp_path: Path) -> Path:
    """A copy of the MaiBot fixture plugins (the host writes their config.toml)."""
    target = tmp_path / "maibot_plugins"
    shutil.copytree(MAIBOT_PLUGINS, target)
    return target


async def test_weather_plugin_gets_its_typed_config_and_a_generated_config_toml(
    make_host: HostFactory, maibot_dir: Path
) -> None:
    folder = maibot_dir / "weather_report"
    async with make_host([folder]) as host:
        MaiBotHost().install(host)
        result = await host.invoke("get_weather", {"days": 9})

    assert result.success, result.error_message
    assert result.content == "北京: 晴 21°C (3 天)"
    written = (folder / "config.toml").read_text(encoding="utf-8")
    assert "# 未指定城市时查询的城市" in written
    assert tomllib.loads(written)["weather"] == {
        "default_city": "北京",
        "unit": "celsius",
        "max_days": 3,
    }


async def test_weather_plugin_sends_with_positional_ctx_calls_and_returns_bool_str(
    make_host: HostFactory, maibot_dir: Path
) -> None:
    async with make_host([maibot_dir / "weather_report"]) as host:
        maibot = MaiBotHost().install(host)
        result = await host.invoke("broadcast_weather", {"city": "上海"}, GROUP_CHAT)

    assert result.success, result.error_message
    assert result.content == "已播报 上海 天气到 qq:123"
    assert maibot.named("send.text") == [
        {"text": "麦麦播报: 上海 小雨 18°C", "stream_id": "qq:123", "return_details": False}
    ]
    assert maibot.named("config.get") == [{"key": "bot.nickname", "default": "麦麦"}]
