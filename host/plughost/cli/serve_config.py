"""The ``plughost serve`` configuration file (TOML), merged with command-line flags.

::

    [host]                      # HostSettings: plugin_dirs, call_timeout, data_dir...
    plugin_dirs = ["plugins"]
    [host.runner]               # RunnerSettings: heartbeats, restarts, env_allowlist...
    env_allowlist = ["HTTP_PROXY"]
    [watch]                     # hot reload
    poll = false
    [search]                    # the tool_search built-in
    threshold = 25
    [mcp.servers.files]         # upstream MCP servers (see docs/mcp.md)
    command = "mcp-server-files"
    [host.dependencies]         # plugins' own packages: wheel_dir, offline, cache_dir...
    offline = false
    [host.web]                  # the operator's console (plughost serve --web)
    address = "127.0.0.1:8770"
    [serve]                     # what serve exposes and how it logs
    mcp = "http"
    mcp_http = "127.0.0.1:8765"

Flags given on the command line win over the file. Every error names the
file, the field and what is wrong.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from plughost.mcp.config import MCPConfig
from plughost.settings import HostSettings

__all__ = ["ConfigFileError", "SearchSettings", "ServeConfig", "ServeSettings", "WatchSettings"]


class ConfigFileError(ValueError):
    """The configuration file is unreadable or invalid."""


class WatchSettings(BaseModel):
    """Hot reload of plugin folders."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    poll: bool = Field(False, description="poll instead of OS events (Docker, network shares)")
    step_ms: int = Field(50, ge=10, description="quiet time that ends a batch of file events")


class SearchSettings(BaseModel):
    """Deferred tool discovery (``tool_search``)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    threshold: int = Field(25, ge=0, description="below this many active tools, show them all")
    always_loaded: list[str] = Field(default_factory=list, description="tools always visible")
    semantic: Literal["auto", "on", "off"] = Field(
        "auto",
        description="rank by BM25 fused with sentence embeddings: auto when the "
        "plughost[semantic] extra is installed, on to require it, off for BM25 alone",
    )
    embedding_cache: Path | None = Field(
        None, description="where tool embeddings are kept between starts; none: in memory"
    )
    used_together: bool = Field(
        True, description="lift the tools conversations called together with the best matches"
    )


class ServeSettings(BaseModel):
    """What ``plughost serve`` exposes and how it reports."""

    model_config = ConfigDict(extra="forbid")

    mcp: Literal["none", "stdio", "http"] = "none"
    mcp_http: str = "127.0.0.1:8765"
    allow_remote: bool = Field(
        False, description="allow --mcp-http and the console (--web) on a non-loopback address"
    )
    mcp_token_file: Path | None = Field(
        None,
        description="the MCP HTTP bearer token (mode 0600); created with a new token when "
        "missing; default: mcp-token beside host.data_dir",
    )
    log_format: Literal["text", "json"] = "text"
    mcp_session_idle_timeout: float | None = Field(
        600.0, gt=0, description="seconds an idle MCP HTTP session lives; none: forever"
    )
    mcp_max_sessions: int | None = Field(
        500, gt=0, description="live MCP HTTP sessions at most; a new one past it gets HTTP 503"
    )
    mcp_page_size: int = Field(100, ge=1, description="tools per MCP tools/list page")
    mcp_input_timeout: float = Field(
        300.0,
        gt=0,
        description="seconds a tool call parked for a 2026-07-28 client's sampling or "
        "elicitation answer waits for the client's retry before it is cancelled",
    )
    mcp_max_parked_calls: int = Field(
        256,
        ge=1,
        description="tool calls parked for 2026-07-28 clients' answers at once, at most; past "
        "it a plugin's sampling or elicitation request is refused to the plugin",
    )


class ServeConfig(BaseModel):
    """The whole configuration of ``plughost serve``."""

    model_config = ConfigDict(extra="forbid")

    host: HostSettings = Field(default_factory=HostSettings)
    watch: WatchSettings = Field(default_factory=WatchSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    mcp: MCPConfig = Field(default_factory=MCPConfig)
    serve: ServeSettings = Field(default_factory=ServeSettings)

    @model_validator(mode="after")
    def _server_homes_beside_data(self) -> ServeConfig:
        """A stdio server without ``data_dir`` keeps its files in ``mcp/NAME`` beside the host's.

        So one ``host.data_dir`` moves everything serve keeps (as ``mcp-token``
        beside it), and nothing lands in whatever directory serve was started from.
        """
        home = self.host.data_dir.parent / "mcp"
        servers = {
            name: server.model_copy(update={"data_dir": str(home / name)})
            if server.data_dir is None and server.resolved_transport == "stdio"
            else server
            for name, server in self.mcp.servers.items()
        }
        if servers != self.mcp.servers:
            self.mcp = self.mcp.model_copy(update={"servers": servers})
        return self

    @classmethod
    def load(cls, path: Path) -> ServeConfig:
        """Read and validate a TOML configuration file.

        Raises:
            ConfigFileError: naming the file, the field and the problem.
        """
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigFileError(f"{path}: file not found") from None
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigFileError(f"{path}: {exc}") from None
        base = path.resolve().parent
        _resolve_paths(data, base)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            lines = [
                f"  {'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
            ]
            raise ConfigFileError(f"{path}: invalid configuration:\n" + "\n".join(lines)) from None

    def to_toml_dict(self) -> dict[str, Any]:
        """The effective configuration as plain data (for ``--print-config``)."""
        return self.model_dump(mode="json", exclude_none=True)


def _resolve_paths(data: dict[str, Any], base: Path) -> None:
    """Make relative paths in the file relative to the file, not to the working directory."""
    _relative(data.get("search"), ("embedding_cache",), base)
    host = data.get("host")
    if isinstance(host, dict):
        _relative(host, ("plugin_dirs", "data_dir", "temp_dir"), base)
        _relative(host.get("remote"), ("keys_dir",), base)
        _relative(host.get("dependencies"), ("root", "cache_dir", "wheel_dir"), base)
    mcp = data.get("mcp")
    if not isinstance(mcp, dict):
        return
    # Each MCP server's table, under any name MCPConfig accepts, its keys in camelCase
    # too (dataDir): configurations pasted from other hosts.
    for table in ("servers", "mcpServers", "mcp_servers"):
        servers = mcp.get(table)
        for server in servers.values() if isinstance(servers, dict) else ():
            _relative(server, ("cwd", "data_dir", "dataDir", "read", "write"), base)


def _relative(table: object, keys: tuple[str, ...], base: Path) -> None:
    """Each of ``keys`` in ``table`` that is a path, or a list of paths, joined to ``base``."""
    if not isinstance(table, dict):
        return
    for key in keys:
        value = table.get(key)
        if isinstance(value, str):
            table[key] = str(base / value)
        elif isinstance(value, list):
            table[key] = [str(base / p) if isinstance(p, str) else p for p in value]
