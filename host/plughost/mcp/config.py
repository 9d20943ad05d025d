"""Configuration of the upstream MCP servers plughost consumes.

One :class:`MCPServerConfig` per server, gathered in :class:`MCPConfig`, which
is the ``[mcp]`` table of the host's TOML configuration::

    [mcp.servers.time]
    command = "uvx"
    args = ["mcp-server-time"]

    [mcp.servers.docs]
    url = "https://docs.example.com/mcp"
    headers = { Authorization = "Bearer ..." }
    enabled_tools = ["search", "mcp_docs_fetch"]
    tool_timeout = 60

The transport is inferred (``command`` -> stdio; a URL ending in ``/sse`` ->
SSE; any other URL -> streamable HTTP) unless ``transport`` says otherwise.
Keys are also accepted in camelCase (``enabledTools``, ``toolTimeout``) and
``type`` stands for ``transport``, so configurations written for other MCP
hosts can be pasted in.

What does not live here: connecting (:mod:`plughost.mcp.client`) and turning
servers into tools (:mod:`plughost.mcp.provider`).
"""

from __future__ import annotations

import re
import tomllib
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from plughost.destinations import checked_grants

__all__ = ["MCPConfig", "MCPServerConfig", "TransportKind"]

TransportKind = Literal["stdio", "sse", "streamable_http"]

_TRANSPORT_SPELLINGS: dict[str, TransportKind] = {
    "stdio": "stdio",
    "sse": "sse",
    "streamable_http": "streamable_http",
    "streamable-http": "streamable_http",
    "streamablehttp": "streamable_http",
    "http": "streamable_http",
}
_SERVER_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class MCPServerConfig(BaseModel):
    """How to reach one MCP server and which of its tools to expose.

    Attributes:
        command: Executable of a stdio server.
        args: Its arguments.
        env: Extra environment variables for it (merged over a safe default set).
        cwd: Its working directory.
        url: Endpoint of an SSE or streamable HTTP server.
        headers: HTTP headers sent with every request (authorization, API keys).
        transport: ``stdio``, ``sse`` or ``streamable_http``; inferred when unset.
        protocol: ``auto`` tries the 2026 protocol and falls back to the
            ``initialize`` handshake; ``legacy`` goes straight to the handshake,
            for servers that mishandle the probe.
        enabled_tools: Tool names to expose, raw (``search``) or prefixed
            (``mcp_docs_search``); ``["*"]`` (the default) exposes every tool and
            also the server's resources and prompts; ``[]`` exposes nothing.
        tool_timeout: Seconds one call (tool, resource read, prompt) may take.
        connect_timeout: Seconds to start, handshake and list the server's tools.
        retry_delay: Seconds before the first new attempt after a failed
            connect; doubled after each further failure, up to 60 s.
        enabled: False keeps the server configured but never connected.
        network: Network grants of a stdio server (see :mod:`plughost.destinations`);
            without any it has no network at all.
        read: Extra paths a stdio server may read (it always reads the system and its
            own installation).
        write: Extra paths a stdio server may write (it always writes its data
            directory, its ``cwd`` and the directories named in its ``args``).
        data_dir: A stdio server's own writable directory, its ``HOME`` and
            ``TMPDIR``; ``data/mcp/<name>`` when unset (``plughost serve`` sets it to
            ``mcp/<name>`` beside ``host.data_dir``).
    """

    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True
    )

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    transport: TransportKind | None = Field(
        default=None, validation_alias=AliasChoices("transport", "type")
    )
    protocol: Literal["auto", "legacy"] = "auto"
    enabled_tools: list[str] = Field(default_factory=lambda: ["*"])
    tool_timeout: float = Field(default=30.0, gt=0)
    connect_timeout: float = Field(default=10.0, gt=0)
    retry_delay: float = Field(default=2.0, ge=0)
    enabled: bool = True
    network: list[str] = Field(default_factory=list)
    read: list[str] = Field(default_factory=list)
    write: list[str] = Field(default_factory=list)
    data_dir: str | None = None

    @field_validator("network")
    @classmethod
    def _grants(cls, value: list[str]) -> list[str]:
        return checked_grants(value)

    @field_validator("transport", mode="before")
    @classmethod
    def _normalize_transport(cls, value: Any) -> Any:
        if isinstance(value, str):
            spelled = _TRANSPORT_SPELLINGS.get(value.strip().lower())
            if spelled is None:
                known = ", ".join(sorted(set(_TRANSPORT_SPELLINGS.values())))
                raise ValueError(f"unknown transport {value!r}; use one of: {known}")
            return spelled
        return value

    @model_validator(mode="after")
    def _check_endpoint(self) -> MCPServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either 'command' (a stdio server) or 'url' (an HTTP server)")
        kind = self.resolved_transport
        if kind == "stdio" and self.command is None:
            raise ValueError("transport 'stdio' needs 'command'")
        if kind != "stdio" and self.url is None:
            raise ValueError(f"transport {kind!r} needs 'url'")
        return self

    @property
    def resolved_transport(self) -> TransportKind:
        """The transport given, or the one inferred from ``command``/``url``."""
        if self.transport is not None:
            return self.transport
        if self.command is not None:
            return "stdio"
        path = (self.url or "").split("?", 1)[0].rstrip("/")
        return "sse" if path.endswith("/sse") else "streamable_http"

    @property
    def exposes_everything(self) -> bool:
        """True when ``enabled_tools`` is ``["*"]``: all tools, resources and prompts."""
        return "*" in self.enabled_tools


class MCPConfig(BaseModel):
    """All upstream MCP servers, by name, and the provider that serves them.

    Attributes:
        servers: Server name -> its configuration. Names become part of tool
            names (``mcp_{server}_{tool}``) and ids (``mcp:{server}:{tool}``).
        provider_name: The provider's name in the tool registry.
        roots: The ``file://`` URIs plughost answers to a server's ``roots/list``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    servers: dict[str, MCPServerConfig] = Field(
        default_factory=dict,
        validation_alias=AliasChoices("servers", "mcpServers", "mcp_servers"),
    )
    provider_name: str = "mcp"
    roots: list[str] = Field(default_factory=list)

    @field_validator("servers")
    @classmethod
    def _check_names(cls, servers: dict[str, MCPServerConfig]) -> dict[str, MCPServerConfig]:
        for name in servers:
            if not _SERVER_NAME.match(name):
                raise ValueError(
                    f"MCP server name {name!r} may only use letters, digits, '_', '-' and '.'"
                )
        return servers

    @classmethod
    def from_toml(cls, text: str) -> MCPConfig:
        """Read the ``[mcp]`` table of a TOML document (no table: no servers).

        Raises:
            ValueError: The TOML is malformed or the table is invalid (the
                message names the offending key).
        """
        try:
            document = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"invalid TOML: {exc}") from None
        table = document.get("mcp", {})
        if not isinstance(table, dict):
            raise ValueError("'mcp' must be a table")
        return cls.model_validate(table)
