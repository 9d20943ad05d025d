"""plughost's plugin test kit runs a MaiBot plugin unmodified, maibot_sdk imports included."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from plughost_sdk.testing import PluginTestHarness
from tests.conftest import TEST_PLUGINS


async def test_the_harness_loads_a_maibot_plugin_and_answers_its_capabilities(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "weather_report"
    shutil.copytree(TEST_PLUGINS / "maibot" / "weather_report", folder)
    sent: list[dict[str, Any]] = []

    def send_text(**args: Any) -> dict[str, Any]:
        sent.append(args)
        return {"success": True}

    async with PluginTestHarness(folder) as harness:
        harness.stub_capability("send.text", send_text)
        harness.stub_capability("config.get", lambda **args: {"success": True, "value": "麦麦"})
        result = await harness.call("broadcast_weather", {"city": "北京"}, stream_id="qq:5")

    assert harness.load_failure is None
    assert result.success, result.error_message
    assert result.content == "已播报 北京 天气到 qq:5"
    assert sent == [
        {"text": "麦麦播报: 北京 晴 21°C", "stream_id": "qq:5", "return_details": False}
    ]
