"""Plugins written for MaiBot's SDK 2.x, unmodified, in real runners with a MaiBot-like host."""

from __future__ import annotations

import shutil
import tomllib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from plughost.host import PluginHost
from plughost.plugins.source import read_config
from plughost.settings import HostSettings
from plughost_sdk.models import ToolExecutionContext
from tests.conftest import TEST_PLUGINS, HostFactory, fast_settings
from tests.maibot_host import PNG_1X1, MaiBotHost
from tests.waiting import wait_until

MAIBOT_PLUGINS = TEST_PLUGINS / "maibot"
GROUP_CHAT = ToolExecutionContext(stream_id="qq:123", is_group_chat=True, group_id="123")


@pytest.fixture
def run_maibot(
    tmp_path: Path,
) -> Callable[..., AbstractAsyncContextManager[tuple[PluginHost, MaiBotHost]]]:
    """Start a host over ``folders`` whose MaiBot capabilities answer before any plugin loads."""

    @asynccontextmanager
    async def start(
        folders: list[Path], settings: HostSettings | None = None
    ) -> AsyncIterator[tuple[PluginHost, MaiBotHost]]:
        host = PluginHost(folders, settings=settings or fast_settings(tmp_path))
        maibot = MaiBotHost().install(host)
        try:
            await host.start()
            yield host, maibot
        finally:
            await host.aclose()

    return start


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


async def test_a_background_task_started_in_on_load_runs_and_uses_llm_render_and_send_image(
    run_maibot: Any, maibot_dir: Path
) -> None:
    async with run_maibot([maibot_dir / "daily_digest"]) as (host, maibot):

        async def rounds() -> int:
            status = await host.invoke("digest_status")
            return int(status.content.removeprefix("rounds="))

        await wait_until(lambda: _at_least(rounds(), 2), timeout=10, what="two digests")
        result = await host.invoke("digest_now", {}, GROUP_CHAT)

    assert result.success, result.error_message
    assert result.content == "回答: 总结今日新闻"
    assert {"prompt": "总结今日新闻", "model": ""} in maibot.named("llm.generate")
    images = maibot.named("send.image")
    assert images[-1] == {"image_base64": PNG_1X1, "stream_id": "qq:123", "return_details": False}
    assert {"image_base64": PNG_1X1, "stream_id": "qq:digest", "return_details": False} in images


async def _at_least(count: Any, wanted: int) -> bool:
    return bool(await count >= wanted)


async def test_a_legacy_action_gets_action_data_reasoning_and_chat_id(
    make_host: HostFactory, maibot_dir: Path
) -> None:
    context = GROUP_CHAT.model_copy(update={"reasoning": "有人说你好"})
    async with make_host([maibot_dir / "legacy_greeter"]) as host:
        maibot = MaiBotHost().install(host)
        greet = await host.invoke("greet", {"person": "小明"}, context)
        refused = await host.invoke("farewell", {"person": " "})

    assert greet.success, greet.error_message
    assert greet.content == "已向 小明 打招呼 (reasoning: 有人说你好)"
    assert maibot.named("send.text")[0] == {
        "text": "你好，小明！",
        "stream_id": "qq:123",
        "return_details": False,
    }
    assert not refused.success
    assert refused.error_message == "没有道别对象"


async def test_a_plugin_importing_maibots_host_code_fails_to_load_saying_so(
    make_host: HostFactory, maibot_dir: Path
) -> None:
    async with make_host([maibot_dir / "host_internals"]) as host:
        problem = host.problems["community.host-internals"]

    assert problem.stage == "import"
    assert "src.common.logger, which is MaiBot's own host code" in problem.reason


async def test_the_mapping_does_not_leak_to_a_native_plugin_in_the_same_runner(
    make_host: HostFactory, maibot_dir: Path, tmp_path: Path
) -> None:
    settings = fast_settings(tmp_path).model_copy(
        # Both plugins in one runner, although one declares capabilities: the operator says so.
        update={"runner_grouping": "single", "group_capability_plugins": True}
    )
    folders = [maibot_dir / "weather_report", TEST_PLUGINS / "real_maibot_importer"]
    async with make_host(folders, settings) as host:
        MaiBotHost().install(host)
        native = await host.invoke("which_maibot_sdk")
        maibot = await host.invoke("get_weather", {"city": "上海"})
        pids = {runner.pid for runner in host.runners()}

    assert len(pids) == 1
    assert native.content == "maibot_sdk.plugin"
    assert "site-packages" in native.structured_content["file"]
    assert maibot.success, maibot.error_message


COMPONENT_FIXTURES = ["group_admin", "message_guard", "note_keeper"]


async def test_components_reach_the_host_registry_in_maibots_dict_shape(
    run_maibot: Any, maibot_dir: Path
) -> None:
    async with run_maibot([maibot_dir / name for name in COMPONENT_FIXTURES]) as (host, _):
        registered = {(c.plugin_id, c.name): c.to_wire() for c in host.components.components()}
        problems = dict(host.problems)

    assert problems == {}
    assert registered[("community.group-admin", "who")]["metadata"]["command_pattern"] == (
        r"^/who (?P<name>\S+)$"
    )
    guard = registered[("community.message-guard", "banned_word_filter")]["metadata"]
    assert (guard["event_type"], guard["intercept_message"], guard["weight"]) == (
        "on_message_pre_process",
        True,
        100,
    )
    hook = registered[("community.message-guard", "planner_note")]["metadata"]
    assert (hook["hook"], hook["mode"], hook["order"], hook["error_policy"]) == (
        "maisaka.planner.before_request",
        "blocking",
        "early",
        "skip",
    )
    assert registered[("community.note-keeper", "save_note")]["type"] == "API"
    assert registered[("community.note-keeper", "note_count")]["metadata"]["dynamic"] is True


async def test_a_get_components_override_makes_a_tool_group_only(
    run_maibot: Any, maibot_dir: Path
) -> None:
    private = ToolExecutionContext(stream_id="qq:private:9", is_group_chat=False)
    args = {"group_id": "123", "person_name": "小红"}
    async with run_maibot([maibot_dir / "group_admin"]) as (host, maibot):
        in_group = await host.invoke("mute_member", args, GROUP_CHAT)
        in_private = await host.invoke("mute_member", args, private)

    assert in_group.success, in_group.error_message
    assert in_group.content == "已在 qq:123 禁言 person-小红"
    assert maibot.named("chat.get_stream_by_group_id") == [{"group_id": "123", "platform": "qq"}]
    assert not in_private.success


async def test_the_bots_configuration_reaches_only_subscribed_plugins(
    run_maibot: Any, maibot_dir: Path
) -> None:
    folders = [maibot_dir / "note_keeper", maibot_dir / "weather_report"]
    async with run_maibot(folders) as (host, _):
        delivered = await host.broadcast_config("bot", {"bot": {"nickname": "小麦"}}, "v2")
        (maibot_dir / "note_keeper" / "config.toml").write_text("[notes]\nmax = 3\n")
        assert await host.reloader.update_config("community.note-keeper")
        updates = await host.invoke("note_updates")

    assert delivered == ["community.note-keeper"]
    assert updates.content == "bot:小麦,self"


async def test_an_edited_config_toml_updates_self_config_and_the_hosts_own_write_does_not(
    run_maibot: Any, maibot_dir: Path
) -> None:
    folder = maibot_dir / "weather_report"
    async with run_maibot([folder]) as (host, _):
        source = host.sources["community.weather-report"]
        assert source.config_version == read_config(folder)[1]  # the write is already known
        text = (folder / "config.toml").read_text(encoding="utf-8")
        (folder / "config.toml").write_text(text.replace('"北京"', '"上海"'), encoding="utf-8")
        updated = await host.reloader.update_config("community.weather-report")
        weather = await host.invoke("get_weather")

    assert updated
    assert weather.content == "上海: 小雨 18°C (1 天)"


async def test_an_edited_maibot_plugin_reloads_blue_green(
    run_maibot: Any, maibot_dir: Path
) -> None:
    folder = maibot_dir / "weather_report"
    async with run_maibot([folder]) as (host, _):
        source = (folder / "plugin.py").read_text(encoding="utf-8")
        (folder / "plugin.py").write_text(source.replace("晴 21°C", "多云 19°C"), encoding="utf-8")
        reloaded = await host.reload_plugin("community.weather-report")
        weather = await host.invoke("get_weather")

    assert reloaded
    assert weather.content == "北京: 多云 19°C (1 天)"
