"""Host and runner settings: one pydantic model per concern, loadable from TOML.

Defaults are chosen for a bot that runs for weeks: a hung plugin is noticed in
about three seconds, a crash-looping plugin is given five restarts a minute
before it is marked failed, and nothing of the host's environment reaches a
plugin unless the operator allow-lists it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from plughost.destinations import checked_grants, parse_destination
from plughost_sdk.wire import DEFAULT_MAX_MESSAGE_BYTES

__all__ = [
    "DependencySettings",
    "HostSettings",
    "LLMSettings",
    "Protection",
    "RemoteSettings",
    "ResourceLimits",
    "RunnerSettings",
    "SandboxSettings",
    "ToolSearchSettings",
    "WebSettings",
]


class ResourceLimits(BaseModel):
    """Operating-system limits applied to a runner process before any plugin code runs.

    A plugin that hits one fails its call (memory, open files) or loses its
    runner (CPU time) with an error that names the limit; the host stays up.
    ``None`` means no limit.
    """

    model_config = ConfigDict(extra="forbid")

    memory_mb: int | None = Field(
        None, gt=16, description="resident memory of the runner and its children, MiB"
    )
    cpu_seconds: int | None = Field(
        None, gt=0, description="CPU time of the runner and all it starts, together, seconds"
    )
    open_files: int | None = Field(None, gt=16, description="open file descriptors")
    call_seconds: float | None = Field(
        None, gt=0, description="wall-clock deadline of any one call, seconds (caps timeout_ms)"
    )
    disk_mb: int | None = Field(
        512,
        gt=0,
        description="disk a plugin may fill: its data directory and what it writes into its "
        "own folder together, MiB (no one file may be larger either); past it the runner is "
        "stopped and the plugin reported, so a full disk never reaches the host",
    )
    processes: int | None = Field(
        None,
        gt=4,
        description="processes and threads of a runner and all it starts (a fork bomb's "
        "ceiling); needs the sandbox's user namespace, or a root host (cgroup v1 pids)",
    )

    def merged(self, override: ResourceLimits | None) -> ResourceLimits:
        """These limits with every field ``override`` sets taking precedence."""
        if override is None:
            return self
        return self.model_copy(update=override.model_dump(exclude_none=True))


Protection = Literal[
    "user_namespace",
    "network_namespace",
    "pid_namespace",
    "folder_overlay",
    "no_new_privs",
    "seccomp",
    "landlock",
    "landlock_network",
    "landlock_scopes",
]


class SandboxSettings(BaseModel):
    """How runners are confined (see docs/operators.md, "Sandbox and threat model").

    With ``enabled`` (the default) every runner gets each protection the kernel
    grants this user; ``require`` names protections without which the host
    refuses to start, so a machine that lacks one fails loudly instead of
    running plugins with less protection than the operator planned for.
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="confine runners with what the kernel offers")
    require: list[Protection] = Field(
        default_factory=list, description="protections the host must not start without"
    )
    pid_namespace: bool = Field(
        True,
        description="give each runner its own pid namespace where the kernel allows it (its "
        "plugins see only their own processes, which all end with the runner); false to "
        "turn it off",
    )
    read_paths: list[Path] = Field(
        default_factory=list, description="extra paths every runner may read"
    )
    write_paths: list[Path] = Field(
        default_factory=list, description="extra paths every runner may write"
    )
    maibot_network: list[str] = Field(
        default_factory=lambda: ["*"],
        description="network grants of a plugin written for MaiBot that network_grants does "
        "not name (MaiBot has no sandbox and its plugins assume the network): by default any "
        "public host on ports 80 and 443, never the host's loopback or private addresses; [] "
        "gives them none",
    )
    manifest_network: bool = Field(
        True,
        description="honour a plughost plugin's manifest 'network' field (TCP ports on the "
        "host's network); false gives such plugins only what network_grants says",
    )
    hosts: dict[str, str] = Field(
        default_factory=dict,
        description="names the plugins' network resolves to fixed addresses, like /etc/hosts "
        "lines (an intranet API, a test stub)",
    )
    learn: bool = Field(
        False,
        description="learn mode (plughost serve --learn): let plugins reach any host but the "
        "host's own, and record each destination so the grants can be pasted",
    )

    @field_validator("maibot_network")
    @classmethod
    def _destinations(cls, value: list[str]) -> list[str]:
        return checked_grants(value)

    @field_validator("hosts")
    @classmethod
    def _addresses(cls, value: dict[str, str]) -> dict[str, str]:
        for name, address in value.items():
            if parse_destination(address).address is None:
                raise ValueError(f"hosts.{name}: {address!r} is not an IP address")
        return value


class RunnerSettings(BaseModel):
    """How runners are started, watched, restarted and stopped."""

    model_config = ConfigDict(extra="forbid")

    transport: Literal["ipc", "tcp"] = "ipc"
    heartbeat_interval: float = Field(0.5, gt=0, description="seconds between runner heartbeats")
    heartbeat_misses: int = Field(6, ge=2, description="missed beats before a runner is hung")
    ready_timeout: float = Field(20.0, gt=0, description="seconds from spawn to ready")
    on_load_timeout: float = Field(30.0, gt=0, description="seconds a plugin's on_load may take")
    max_restarts: int = Field(5, ge=0, description="restarts allowed within restart_window")
    restart_window: float = Field(60.0, gt=0, description="seconds over which restarts count")
    backoff_initial: float = Field(0.2, ge=0, description="first restart delay, doubled each time")
    backoff_max: float = Field(10.0, ge=0, description="longest restart delay")
    shutdown_drain: float = Field(5.0, ge=0, description="seconds calls may finish at shutdown")
    term_timeout: float = Field(2.0, gt=0, description="seconds between SIGTERM and SIGKILL")
    stuck_grace: float = Field(2.0, gt=0, description="seconds a sync call may overrun")
    fork_server: bool = Field(
        True,
        description="fork runners from a process that has already imported them (starts in "
        "milliseconds instead of ~150 ms of CPU); off: start each runner as a new interpreter",
    )
    fork_timeout: float = Field(
        3.0,
        gt=0,
        description="seconds the fork server may take to fork a runner; past it the fork "
        "server is replaced and the runner starts as a new interpreter",
    )
    output_lines_per_second: float = Field(
        200.0,
        gt=0,
        description="lines a runner may write to stdout/stderr, and log records it may send, "
        "per second each (bursts of ten seconds' worth); the rest is dropped and counted",
    )
    nice: int = Field(0, ge=0, le=19, description="CPU niceness added to every runner")
    probation_nice: int = Field(
        10,
        ge=0,
        le=19,
        description="extra niceness of a runner restarted after a crash, so a plugin that "
        "keeps crashing or spinning cannot take CPU from healthy ones",
    )
    max_message_bytes: int = Field(DEFAULT_MAX_MESSAGE_BYTES, gt=1024)
    env_allowlist: list[str] = Field(default_factory=list)
    limits: ResourceLimits = Field(default_factory=ResourceLimits)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"


class DependencySettings(BaseModel):
    """How the Python packages plugins declare are installed (docs/operators.md, "Plugin packages").

    Each distinct requirement set gets an environment of its own under ``root``,
    installed by uv from PyPI (or the operator's index, through uv's own
    configuration), or only from ``wheel_dir`` when ``offline``.
    """

    model_config = ConfigDict(extra="forbid")

    root: Path | None = Field(
        None, description="where the environments live; default: <data_dir>/.packages"
    )
    cache_dir: Path | None = Field(
        None, description="uv's download and build cache; default: <root>/cache"
    )
    wheel_dir: Path | None = Field(
        None, description="a directory of wheels searched before (or, offline, instead of) PyPI"
    )
    offline: bool = Field(
        False, description="never touch the network: install only from wheel_dir and the cache"
    )
    source_builds: bool = Field(
        False,
        description="let uv build packages that ship no wheel; their build code then runs on "
        "the host, outside any sandbox, so only turn it on for requirements you trust",
    )
    install_timeout: float = Field(
        600.0, gt=0, description="seconds one environment's installation may take"
    )

    @field_validator("offline")
    @classmethod
    def _offline_needs_wheels(cls, value: bool, info: ValidationInfo) -> bool:
        if value and info.data.get("wheel_dir") is None:
            raise ValueError("offline = true needs wheel_dir: the directory to install from")
        return value


class WebSettings(BaseModel):
    """The operator's console (:mod:`plughost.web`): a web page, ``/metrics`` and an API.

    Every read (state, events, the event stream, ``/metrics``) and every action
    (enable, disable, reload, a tool call) needs the token, from every client,
    loopback included: a plugin can reach the loopback too. Only the page itself
    is open. ``plughost serve --web HOST:PORT`` sets ``address``.
    """

    model_config = ConfigDict(extra="forbid")

    address: str | None = Field(
        None, description="HOST:PORT to serve the console on; None serves none (port 0: any)"
    )
    token: str | None = Field(
        None, min_length=16, description="the access token; None makes a new one at each start"
    )
    allow_remote: bool = Field(False, description="allow a non-loopback address")
    feed_size: int = Field(
        1000, ge=10, le=100_000, description="events and log records kept in memory"
    )


class RemoteSettings(BaseModel):
    """Runners on other machines (docs/operators.md, "Remote runners").

    With ``listen`` set, the host accepts runners that connect over CurveZMQ
    with a credential from ``plughost runner-credentials new``; ``keys_dir``
    holds the host's key pair and every credential's public key and allow-list.
    """

    model_config = ConfigDict(extra="forbid")

    listen: str | None = Field(
        None, description="tcp://ADDR:PORT to accept remote runners on; None accepts none"
    )
    keys_dir: Path = Field(
        Path("data/remote-keys"), description="the host's key pair and the issued credentials"
    )
    grace: float = Field(
        10.0,
        ge=0,
        description="seconds a silent remote runner's tools stay listed (its calls fail at "
        "once) before they are removed; they come back when it reconnects",
    )


class ToolSearchSettings(BaseModel):
    """Deferred tool discovery for the embedder's chats (``host.search``, ``tool_search``).

    Off by default for an embedded host; ``plughost serve`` turns it on from its
    ``[search]`` table. On, the host registers the ``tool_search`` built-in
    itself and a :class:`~plughost.chat.ChatSession` sends each turn's tools
    through it.
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    strategy: Literal["generic", "anthropic", "openai"] = Field(
        "generic",
        description="generic: any API (the tools list grows as tools are found); anthropic: "
        "Messages API deferred loading; openai: Responses API tool search",
    )
    tool_format: Literal["openai", "anthropic"] = Field(
        "openai", description="the definition shape of the generic strategy's tools list"
    )
    threshold: int = Field(25, ge=0, description="below this many active tools, send them all")
    always_loaded: list[str] = Field(default_factory=list, description="tools always sent")
    semantic: Literal["auto", "on", "off"] = Field(
        "auto",
        description="rank by BM25 fused with sentence embeddings: auto when the "
        "plughost[semantic] extra is installed, on to require it, off for BM25 alone",
    )
    embedding_cache: Path | None = Field(
        None,
        description="directory of the tool embeddings cache, so a restart embeds nothing "
        "it embedded before; unset keeps them in memory",
    )
    used_together: bool = Field(
        True,
        description="lift the tools conversations called together with the best matches; "
        "off ranks each query on its own words alone",
    )


class LLMSettings(BaseModel):
    """Which plugin's ``@LLMProvider`` answers ``llm.*`` when the embedder does not.

    A provider is named ``"plugin_id"`` (its only provider) or
    ``"plugin_id:client_type"``. An embedder's own ``llm.*`` handler always wins;
    without one, a call naming a model in ``models`` goes to that provider, any
    other to ``provider``; with neither, ``llm.generate`` falls back to the MCP
    client's sampling.
    """

    model_config = ConfigDict(extra="forbid")

    provider: str = Field(
        "", description="the provider serving llm.* by default: 'plugin_id[:client_type]'"
    )
    models: dict[str, str] = Field(
        default_factory=dict,
        description="model or task name -> provider ('plugin_id[:client_type]') for calls "
        "that name it (model, model_name or task_name)",
    )


class HostSettings(BaseModel):
    """Everything ``PluginHost`` and ``plughost serve`` can be told."""

    model_config = ConfigDict(extra="forbid")

    plugin_dirs: list[Path] = Field(default_factory=list)
    data_dir: Path = Field(Path("data/plugins"), description="per-plugin data directories")
    temp_dir: Path = Field(Path("temp/plugins"), description="per-plugin temp directories")
    call_timeout: float = Field(60.0, gt=0, description="default deadline of a tool call (s)")
    runner_grouping: Literal["per_plugin", "single"] = "per_plugin"
    group_capability_plugins: bool = Field(
        False,
        description="with runner_grouping = 'single', also put plugins that declare "
        "capabilities in the shared runner (they can then act as each other); by default "
        "each of them gets a runner of its own",
    )
    runner: RunnerSettings = Field(default_factory=RunnerSettings)
    plugin_limits: dict[str, ResourceLimits] = Field(
        default_factory=dict, description="per-plugin overrides of runner.limits, by plugin id"
    )
    plugin_replicas: dict[str, Annotated[int, Field(ge=1, le=64)]] = Field(
        default_factory=dict,
        description="runners per plugin, by plugin id (default 1): calls go to the least-loaded "
        "healthy one, a crash fails only that runner's calls, a reload replaces them one at a "
        "time; only with runner_grouping = 'per_plugin'",
    )
    tool_grants: dict[str, list[str]] = Field(
        default_factory=dict,
        description="tools each plugin may call through ctx.call_tool besides its own, by "
        "calling plugin id: patterns over tool names (see plughost.plugins.grants)",
    )
    network_grants: dict[str, list[str]] = Field(
        default_factory=dict,
        description="hosts and ports each plugin may reach, by plugin id: 'api.example.com', "
        "'api.example.com:8443', '*.example.org', '*', '203.0.113.7:5000', 'localhost:6379' "
        "(see plughost.destinations); replaces runner.sandbox.maibot_network for the "
        "plugins it names",
    )
    write_grants: dict[str, list[Path]] = Field(
        default_factory=dict,
        description="paths each plugin may write besides its own folder, data and temp "
        "directories, by plugin id (a shared media folder, say; made when missing); the "
        "sandbox's refusal messages name the path to add",
    )
    api_grants: dict[str, list[str]] = Field(
        default_factory=dict,
        description="other plugins' public APIs each plugin may call through ctx.api.call, by "
        "calling plugin id: patterns over 'plugin_id.api_name' (see plughost.plugins.grants)",
    )
    enforce_tool_visibility: bool = Field(
        True,
        description="refuse a model's call of a hidden tool, or of a deferred tool its "
        "conversation has not discovered through tool_search; false runs any tool by name",
    )
    background_tool_calls: list[str] = Field(
        default_factory=list,
        description="plugin ids that may call tools through ctx.call_tool from background "
        "work, outside any call they serve (everyone else only while serving a call)",
    )
    tool_call_depth: int = Field(
        4, ge=1, le=32, description="nested ctx.call_tool calls allowed in one chain"
    )
    handler_failure_limit: int = Field(
        3,
        ge=0,
        description="consecutive timeouts or crashes after which an event or hook handler is "
        "skipped for handler_cooldown seconds (0: never skip)",
    )
    handler_cooldown: float = Field(
        60.0, gt=0, description="seconds a failing event or hook handler is skipped"
    )
    write_plugin_config: bool = Field(
        True,
        description="write a MaiBot plugin's config.toml from its config model when it is "
        "missing or lacks fields, as MaiBot does",
    )
    web: WebSettings = Field(default_factory=WebSettings)
    dependencies: DependencySettings = Field(default_factory=DependencySettings)
    remote: RemoteSettings = Field(default_factory=RemoteSettings)
    tool_search: ToolSearchSettings = Field(default_factory=ToolSearchSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)

    def limits_for(self, plugin_ids: Sequence[str]) -> ResourceLimits:
        """A runner's limits: the global ones, with a plugin's own overrides when it runs alone."""
        limits = self.runner.limits
        if len(plugin_ids) == 1:
            return limits.merged(self.plugin_limits.get(plugin_ids[0]))
        return limits

    @field_validator("network_grants")
    @classmethod
    def _network_grants(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for plugin_id, grants in value.items():
            try:
                checked_grants(grants)
            except ValueError as exc:
                raise ValueError(f"network_grants.{plugin_id}: {exc}") from None
        return value
