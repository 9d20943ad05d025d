"""MCP server configuration: transports inferred, foreign spellings accepted, mistakes named."""

from __future__ import annotations

import pytest

from plughost.mcp.config import MCPConfig, MCPServerConfig


def test_a_command_means_stdio() -> None:
    config = MCPServerConfig(command="uvx", args=["mcp-server-time"])

    assert config.resolved_transport == "stdio"


def test_a_url_ending_in_sse_means_sse_and_any_other_url_streamable_http() -> None:
    sse = MCPServerConfig(url="https://example.com/sse/")
    sse_with_query = MCPServerConfig(url="https://example.com/sse?key=1")
    http = MCPServerConfig(url="https://example.com/mcp")

    assert sse.resolved_transport == "sse"
    assert sse_with_query.resolved_transport == "sse"
    assert http.resolved_transport == "streamable_http"


def test_an_explicit_transport_overrides_the_inference() -> None:
    config = MCPServerConfig(url="https://example.com/sse", transport="streamable_http")

    assert config.resolved_transport == "streamable_http"


def test_defaults_expose_everything_with_a_thirty_second_call_timeout() -> None:
    config = MCPServerConfig(command="x")

    assert config.enabled_tools == ["*"]
    assert config.exposes_everything
    assert config.tool_timeout == 30.0


def test_camel_case_keys_and_type_from_other_hosts_are_accepted() -> None:
    config = MCPConfig.model_validate(
        {
            "mcpServers": {
                "docs": {
                    "url": "https://example.com/mcp",
                    "type": "streamableHttp",
                    "enabledTools": ["search"],
                    "toolTimeout": 5,
                }
            }
        }
    )
    docs = config.servers["docs"]

    assert docs.transport == "streamable_http"
    assert docs.enabled_tools == ["search"]
    assert docs.tool_timeout == 5
    assert not docs.exposes_everything


def test_the_mcp_table_of_a_toml_document_is_read() -> None:
    config = MCPConfig.from_toml(
        """
        [mcp]
        provider_name = "upstream"

        [mcp.servers.time]
        command = "uvx"
        args = ["mcp-server-time"]
        connect_timeout = 3
        """
    )

    assert config.provider_name == "upstream"
    assert config.servers["time"].args == ["mcp-server-time"]
    assert config.servers["time"].connect_timeout == 3


def test_a_toml_document_without_an_mcp_table_has_no_servers() -> None:
    assert MCPConfig.from_toml("[other]\nx = 1\n").servers == {}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "either 'command'"),
        ({"command": "x", "url": "http://h/mcp"}, "either 'command'"),
        ({"url": "http://h/mcp", "transport": "stdio"}, "needs 'command'"),
        ({"command": "x", "transport": "sse"}, "needs 'url'"),
        ({"command": "x", "transport": "carrier-pigeon"}, "unknown transport"),
        ({"command": "x", "tool_timeout": 0}, "greater than 0"),
        ({"command": "x", "comand": "typo"}, "comand"),
    ],
)
def test_invalid_server_configs_are_refused_with_a_message_naming_the_problem(
    fields: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        MCPServerConfig.model_validate(fields)


def test_server_names_that_would_break_tool_ids_are_refused() -> None:
    with pytest.raises(ValueError, match="may only use"):
        MCPConfig.model_validate({"servers": {"a:b": {"command": "x"}}})


def test_malformed_toml_is_reported_as_a_value_error() -> None:
    with pytest.raises(ValueError, match="invalid TOML"):
        MCPConfig.from_toml("[mcp\n")
