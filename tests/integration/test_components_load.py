"""Components beside tools reach the host through real runners: declared, reported, callable."""

from __future__ import annotations

from plughost.host import PluginHost
from tests.conftest import TEST_PLUGINS, HostFactory

CHAT = TEST_PLUGINS / "chat"
GATEWAY = TEST_PLUGINS / "gateway"


def _runner(host: PluginHost, plugin_id: str) -> object:
    runner = host.runner_for(plugin_id)
    assert runner is not None
    return runner


async def test_a_plugins_components_are_registered_with_its_tools(make_host: HostFactory) -> None:
    async with make_host([CHAT]) as host:
        keys = [c.key for c in host.components.components()]
        tools = [c.name for c in host.components.by_plugin("tests.chat")]

    assert tools == ["chat_time"]
    assert sorted(keys) == sorted(
        [
            "API:tests.chat.add",
            "API:tests.chat.secret",
            "COMMAND:tests.chat.boom",
            "COMMAND:tests.chat.echo",
            "COMMAND:tests.chat.exit",
            "COMMAND:tests.chat.slow",
            "COMMAND:tests.chat.weather",
            "EVENT_HANDLER:tests.chat.broken_listener",
            "EVENT_HANDLER:tests.chat.recorder",
            "EVENT_HANDLER:tests.chat.spam_filter",
            "EVENT_HANDLER:tests.chat.tagger",
            "HOME_CARD:tests.chat.status",
            "HOOK_HANDLER:tests.chat.add_reminder",
        ]
    )


async def test_the_runner_reports_components_in_maibots_dict_shape(make_host: HostFactory) -> None:
    async with make_host([CHAT]) as host:
        runner = host.runner_for("tests.chat")
        assert runner is not None
        (loaded,) = runner.report["loaded"]

    weather = next(c for c in loaded["components"] if c["name"] == "weather")
    assert weather == {
        "name": "weather",
        "type": "COMMAND",
        "metadata": {
            "description": "Weather for a city",
            "enabled": True,
            "command_pattern": r"^/weather (?P<city>\w+)",
            "aliases": [],
            "handler_name": "weather_command",
        },
    }


async def test_a_command_is_called_in_its_runner_and_its_tuple_read(
    make_host: HostFactory,
) -> None:
    async with make_host([CHAT]) as host:
        runner = host.runner_for("tests.chat")
        assert runner is not None
        reply = await runner.invoke_component(
            "tests.chat", "COMMAND", "weather", {"matched_groups": {"city": "Oslo"}}, 5.0
        )

    assert reply == {"success": True, "response": "sunny in Oslo", "intercept": True, "error": ""}


async def test_calling_a_component_the_plugin_lacks_is_component_not_found(
    make_host: HostFactory,
) -> None:
    async with make_host([CHAT]) as host:
        runner = host.runner_for("tests.chat")
        assert runner is not None
        reply = await runner.invoke_component("tests.chat", "COMMAND", "nope", {}, 5.0)
        card = await runner.invoke_component("tests.chat", "HOME_CARD", "status", {}, 5.0)

    assert reply["success"] is False
    assert reply["error_code"] == "component_not_found"
    assert "has no COMMAND component 'nope'" in reply["error"]
    assert card["error_code"] == "component_not_found"


async def test_a_message_gateway_is_registered_beside_the_plugins_tool(
    make_host: HostFactory,
) -> None:
    async with make_host([GATEWAY, CHAT]) as host:
        gateways = [c.to_wire() for c in host.components.components("MESSAGE_GATEWAY")]
        ping = await host.invoke("ping")

    assert ping.content == "pong"
    assert [
        (g["name"], g["metadata"]["route_type"], g["metadata"]["platform"]) for g in gateways
    ] == [("qq_bridge", "duplex", "qq")]


async def test_plugin_status_lists_components_and_the_serve_table_counts_them(
    make_host: HostFactory,
) -> None:
    from rich.console import Console

    from plughost.cli.console import plugins_table

    async with make_host([CHAT]) as host:
        (row,) = host.status()
        console = Console(width=200, record=True)
        console.print(plugins_table([row]))

    assert "COMMAND:tests.chat.weather" in row.components
    assert "chat_time; 5 commands, 4 event handlers, 1 hook handler, 2 APIs, 1 home card" in (
        console.export_text()
    )
