"""PluginTestHarness: a minimal host for one plugin folder, for tests.

It reads the folder as the host does (manifest, ``config.toml``), starts a real
runner through :class:`~plughost_sdk.testing._runner_link.RunnerLink`, and plays
the host's part in the plugin's calls: argument checks, context keywords,
capability checks against the manifest, stubs, recorded messages and logs.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import inspect
import json
import logging
import secrets
import shutil
import tempfile
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from plughost_sdk import __version__ as sdk_version
from plughost_sdk import wire
from plughost_sdk.errors import (
    ManifestError,
    PluginError,
    PluginLoadError,
    RunnerCrashedError,
)
from plughost_sdk.manifest import Manifest, load_manifest, version_in_range
from plughost_sdk.models import ToolExecutionResult
from plughost_sdk.results import normalize_result
from plughost_sdk.testing._runner_link import RefusedError, RunnerLink

__all__ = ["CapabilityStub", "LoadFailure", "PluginLog", "PluginTestHarness", "SentMessage"]


# The host closes a top-level schema to unknown arguments unless it says otherwise or is
# built from one of these (where closing it would reject valid fields).
_SELF_DESCRIBED = ("unevaluatedProperties", "allOf", "anyOf", "oneOf", "$ref", "if")

_TOOLS_CALL = "tools.call"
_NESTED_CALL_LIMIT = 4
"""Nested ``ctx.call_tool`` calls in flight at once, like the host's default ``tool_call_depth``."""

CapabilityStub = Callable[..., Any]
"""Answers a capability call: gets the call's arguments as keywords; may be async."""


@dataclass(frozen=True, slots=True)
class SentMessage:
    """One ``ctx.send.*`` call, recorded by the default stub (which answers True)."""

    capability: str
    stream_id: str
    args: dict[str, Any]

    @property
    def text(self) -> str | None:
        """The text of a ``send.text`` message; None for other kinds."""
        value = self.args.get("text")
        return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class PluginLog:
    """A log record, or a printed line, forwarded by the runner."""

    level: int
    logger: str
    message: str


@dataclass(frozen=True, slots=True)
class LoadFailure:
    """Why the plugin did not load.

    Attributes:
        stage: ``manifest``, ``config``, ``import``, ``factory`` or ``on_load``.
        reason: What went wrong.
        file: The file at fault, when known.
        line: The line in ``file``, or 0.
        traceback: The Python traceback, when an exception caused it.
    """

    stage: str
    reason: str
    file: str = ""
    line: int = 0
    traceback: str = ""

    def describe(self) -> str:
        """One readable line: stage, file:line, reason."""
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{self.stage} failed" + (f" at {where}" if where else "") + f": {self.reason}"


class PluginTestHarness:
    """A minimal host for one plugin folder, for tests.

    Attributes:
        plugin_id: The manifest's id (the folder name until the manifest is read).
        manifest: The validated manifest, or None if it is invalid.
        config: The configuration the plugin was given.
        tools: The plugin's tool declarations, as the runner reported them.
        components: Its commands, event and hook handlers, APIs and home cards, as
            the runner reported them (the dict shape of MaiBot's SDK).
        sent: Messages the plugin sent through ``ctx.send.*``.
        progress: ``(progress, total, message)`` of each ``ctx.report_progress``, in order.
        logs: Log records and printed lines; complete once the harness is closed,
            since the runner forwards them in batches about every 0.1 s.
        load_failure: Why the plugin did not load, or None.

    Args:
        plugin_dir: The plugin folder (``plugin.py``, ``_manifest.json``...).
        config: Merged over the folder's ``config.toml``, table by table.
        capabilities: Stubs by capability name (``"db.query"``, or ``"db.*"``).
        work_dir: Holds the plugin's data and temp directories; without it, a
            temporary directory removed on close.
        env: Extra environment variables for the runner, which inherits the rest
            (the real host passes only an allow-list).
        start_timeout: Seconds from spawning the runner to the plugin loaded.
        call_timeout: Default deadline of a call, for tools without ``timeout_ms``.
    """

    def __init__(
        self,
        plugin_dir: str | Path,
        *,
        config: Mapping[str, Any] | None = None,
        capabilities: Mapping[str, CapabilityStub] | None = None,
        work_dir: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        start_timeout: float = 30.0,
        call_timeout: float = 30.0,
    ) -> None:
        self.plugin_dir = Path(plugin_dir).resolve()
        self.plugin_id = self.plugin_dir.name
        self.manifest: Manifest | None = None
        self.config: dict[str, Any] = {}
        self.tools: list[dict[str, Any]] = []
        self.components: list[dict[str, Any]] = []
        self.sent: list[SentMessage] = []
        self.logs: list[PluginLog] = []
        self.progress: list[tuple[float, float | None, str | None]] = []
        self.load_failure: LoadFailure | None = None
        self._override = dict(config or {})
        self._stubs: dict[str, CapabilityStub] = {}
        for name, stub in (capabilities or {}).items():
            self.stub_capability(name, stub)
        self._work_dir = Path(work_dir).resolve() if work_dir is not None else None
        self._env = dict(env or {})
        self._start_timeout = start_timeout
        self._call_timeout = call_timeout
        self._token = secrets.token_hex(32)
        self._root: Path | None = None
        self._link: RunnerLink | None = None
        self._nested_calls = 0
        self._state: Literal["new", "started", "closed"] = "new"

    @property
    def data_dir(self) -> Path:
        """The plugin's data directory (``ctx.paths.data()``)."""
        return self._base() / "data" / self.plugin_id

    @property
    def temp_dir(self) -> Path:
        """The plugin's temp directory (``ctx.paths.temp()``)."""
        return self._base() / "temp" / self.plugin_id

    def _base(self) -> Path:
        base = self._work_dir or self._root
        if base is None:
            raise RuntimeError("the harness has not started a runner")
        return base

    async def __aenter__(self) -> PluginTestHarness:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def stub_capability(self, name: str, handler: CapabilityStub) -> None:
        """Answer the plugin's calls to ``name`` (``group.name``, or ``group.*``) with ``handler``.

        ``handler`` gets the call's arguments as keywords. Its return value (awaited
        if need be) goes back to the plugin; an exception it raises reaches the
        plugin as a ``CapabilityError``. A stub may be set at any time.
        """
        if "." not in name:
            raise ValueError(f"capability names look like 'db.query' or 'db.*', got {name!r}")
        self._stubs[name] = handler

    async def start(self) -> None:
        """Read the folder, spawn the runner and wait until it reports the plugin loaded.

        A plugin that fails to load is not an error here: see :attr:`load_failure`.

        Raises:
            RunnerStartError: the runner could not start, or died or stalled before ready.
        """
        if self._state != "new":
            raise RuntimeError("a PluginTestHarness starts once; make a new one")
        self._state = "started"
        try:
            if self._read_folder():
                self._apply_report(await self._start_runner())
        except BaseException:
            await self.aclose()
            raise

    def _read_folder(self) -> bool:
        """Check the manifest and read the configuration as the host does; False on failure."""
        try:
            self.manifest = manifest = load_manifest(self.plugin_dir)
        except ManifestError as exc:
            self.load_failure = LoadFailure("manifest", "; ".join(exc.problems), exc.path)
            return False
        self.plugin_id = manifest.id
        wanted = manifest.plughost_sdk
        if wanted is not None and not version_in_range(sdk_version, wanted):
            reason = (
                f"field 'plughost_sdk' asks for {wanted.min_version or '*'} to "
                f"{wanted.max_version or '*'}, but plughost-sdk {sdk_version} is installed"
            )
            self.load_failure = LoadFailure("manifest", reason, str(self.plugin_dir))
            return False
        config_file = self.plugin_dir / "config.toml"
        try:
            base = tomllib.loads(config_file.read_text("utf-8")) if config_file.is_file() else {}
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            self.load_failure = LoadFailure("config", f"invalid TOML: {exc}", str(config_file))
            return False
        self.config = _merged(base, self._override)
        return True

    async def _start_runner(self) -> dict[str, Any]:
        self._root = Path(tempfile.mkdtemp(prefix="plughost-test-"))  # mode 0700: private
        self._link = RunnerLink(
            self._root,
            token=self._token,
            hello=self._hello_reply,
            on_request=self._reply,
            on_logs=self._record_logs,
            on_progress=self._record_progress,
            env=self._env,
        )
        return await self._link.start(self._start_timeout)

    def _hello_reply(self) -> dict[str, Any]:
        spec = {
            "plugin_id": self.plugin_id,
            "path": str(self.plugin_dir),
            "config": self.config,
            "config_version": _fingerprint(self.config),
            "data_dir": str(self.data_dir),
            "temp_dir": str(self.temp_dir),
            "on_load_timeout": self._start_timeout,
            "flavor": "maibot" if self.manifest and self.manifest.targets_maibot else "plughost",
        }
        return {
            "plugins": [spec],
            "heartbeat_interval": 1.0,
            "max_message_bytes": wire.DEFAULT_MAX_MESSAGE_BYTES,
            "log_level": logging.DEBUG,
        }

    def _apply_report(self, report: dict[str, Any]) -> None:
        for loaded in report.get("loaded") or []:
            if loaded.get("plugin_id") == self.plugin_id:
                self.tools = list(loaded.get("tools") or [])
                self.components = list(loaded.get("components") or [])
        for failed in report.get("failed") or []:
            self.load_failure = LoadFailure(
                stage=str(failed.get("stage", "load")),
                reason=str(failed.get("reason", "")),
                file=str(failed.get("file", "")),
                line=int(failed.get("line") or 0),
                traceback=str(failed.get("traceback", "")),
            )

    async def call(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        stream_id: str = "",
        timeout: float | None = None,
        **context: Any,
    ) -> ToolExecutionResult:
        """Call ``tool`` as the host would and return its result.

        As from the host, the handler also receives the conversation's context as
        keyword arguments, and a failure of the tool or of the runner is a failed
        result, not an exception.

        Args:
            tool: The tool's name as declared in ``@Tool``.
            arguments: The model's arguments. Missing required and unknown names
                are refused as the host refuses them; types are not cast.
            stream_id: The chat the call comes from.
            timeout: Seconds; by default the tool's ``timeout_ms``, else ``call_timeout``.
            **context: More context for the handler: ``session_id``, ``group_id``,
                ``user_id``, ``platform``, ``is_group_chat``, ``message``, ``reasoning``.

        Raises:
            PluginLoadError: the plugin did not load (see :attr:`load_failure`).
            ValueError: no such tool, or arguments the host would refuse.
        """
        declaration = self._declaration(tool)
        args = dict(arguments or {})
        schema = declaration.get("parameters_schema") or {}
        _check_arguments(tool, schema, args)
        _fill_defaults(schema, args)
        # Context that is given wins over a same-named argument; context that is not never does.
        kwargs = {**args, **context, **({"stream_id": stream_id} if stream_id else {})}
        for name, unset in (("stream_id", ""), ("is_group_chat", False), ("message", None)):
            kwargs.setdefault(name, unset)
        if kwargs["stream_id"]:
            kwargs.setdefault("chat_id", kwargs["stream_id"])  # as the host does
        if declaration.get("legacy_action"):  # as the host does for an @Action
            kwargs["action_data"] = args
            kwargs.setdefault("reasoning", "")
        timeout_ms = (declaration.get("metadata") or {}).get("timeout_ms")
        budget = timeout or (timeout_ms / 1000 if timeout_ms else self._call_timeout)
        body = {"tool": tool, "arguments": kwargs}
        try:
            reply = await self._request_runner(
                "tool.invoke", body, plugin=self.plugin_id, timeout=budget
            )
        except TimeoutError:
            message = f"tool {tool} did not finish within {budget:g} s"
            return ToolExecutionResult.failure(tool, message, "timeout")
        except RefusedError as refused:
            return ToolExecutionResult.failure(tool, str(refused), refused.error["code"])
        except RunnerCrashedError as exc:
            return ToolExecutionResult.failure(tool, f"the runner died: {exc}", "plugin_crashed")
        return wire.result_from_wire((reply or {}).get("result"))

    async def invoke_component(
        self,
        kind: Literal["COMMAND", "EVENT_HANDLER", "HOOK_HANDLER", "API"],
        name: str,
        args: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Run one command, event handler, hook handler or API with ``args``, as the host does.

        This calls the handler directly; the host's matching and ordering (which
        command a text triggers, which handler runs first) are not involved. The
        reply is the runner's reading of the return value for that kind, such as
        ``{"success", "response", "intercept", "error"}`` for a command (see
        docs/protocol.md, ``component.invoke``); a handler that raises gives
        ``success: False`` and its ``error``.

        Raises:
            PluginLoadError: the plugin did not load (see :attr:`load_failure`).
            ValueError: the plugin has no such component.
            TimeoutError: it did not finish within ``timeout`` (default ``call_timeout``).
        """
        self._require_loaded(f"{kind} {name!r}")
        if not any(c.get("type") == kind and c.get("name") == name for c in self.components):
            names = ", ".join(f"{c.get('type')} {c.get('name')}" for c in self.components)
            raise ValueError(
                f"plugin {self.plugin_id} has no {kind} {name!r}; its components: {names or 'none'}"
            )
        body = {"type": kind, "name": name, "args": dict(args or {})}
        budget = timeout or self._call_timeout
        reply = await self._request_runner(
            "component.invoke", body, plugin=self.plugin_id, timeout=budget
        )
        return dict(reply or {})

    def _require_loaded(self, what: str) -> None:
        if self.load_failure is not None:
            raise PluginLoadError(
                f"plugin {self.plugin_id} did not load, so {what} cannot be called: "
                + self.load_failure.describe()
            )
        if self._state != "started":
            raise RuntimeError("use the harness inside 'async with PluginTestHarness(...)'")

    def _declaration(self, tool: str) -> dict[str, Any]:
        self._require_loaded(repr(tool))
        for declaration in self.tools:
            if declaration.get("name") == tool:
                return declaration
        names = ", ".join(str(d.get("name")) for d in self.tools) or "none"
        raise ValueError(f"plugin {self.plugin_id} has no tool {tool!r}; its tools: {names}")

    async def update_config(self, config: Mapping[str, Any]) -> None:
        """Replace the whole configuration, as an edit of ``config.toml`` does.

        The plugin's ``config_model`` checks it, then its ``on_config_update`` runs.

        Raises:
            PluginError: the plugin rejected it; the old configuration stays.
        """
        if self.load_failure is not None or self._state != "started":
            raise RuntimeError("update_config() needs a loaded plugin in a running harness")
        data = dict(config)
        body = {"config": data, "version": _fingerprint(data), "scope": "self", "timeout": 10.0}
        try:
            await self._request_runner("config.update", body, plugin=self.plugin_id, timeout=12.0)
        except RefusedError as refused:
            raise PluginError(f"the plugin rejected the configuration: {refused}") from None
        self.config = data

    async def aclose(self) -> None:
        """Ask the runner to unload the plugin and exit, escalate if it does not, clean up."""
        if self._state == "closed":
            return
        self._state = "closed"
        try:
            if self._link is not None:
                await self._link.aclose()
        finally:
            if self._root is not None:
                shutil.rmtree(self._root, ignore_errors=True)

    async def _request_runner(
        self, method: wire.Method, body: Any, *, plugin: str | None = None, timeout: float
    ) -> Any:
        if self._link is None:
            raise RunnerCrashedError("the runner is not running")
        return await self._link.request(method, body, plugin=plugin, timeout=timeout)

    async def _reply(self, envelope: wire.Envelope, body: dict[str, Any]) -> Any:
        """The body answering a runner request: ``capability.call``."""
        if envelope["method"] == "capability.call":
            name, args = str(body.get("capability", "")), dict(body.get("args") or {})
            return {"value": await self._capability(envelope["plugin"], name, args)}
        raise RefusedError("bad_payload", f"unknown method {envelope['method']!r}")

    async def _capability(self, plugin: str | None, name: str, args: dict[str, Any]) -> Any:
        """Check the call against the manifest, as the host does, then run its stub."""
        if self.manifest is None or plugin != self.plugin_id:
            raise RefusedError(
                "capability_denied", f"this harness does not serve plugin {plugin!r}"
            )
        if not self.manifest.allows_capability(name):
            raise RefusedError(
                "capability_denied",
                f"plugin {self.plugin_id} may not call {name}: add {name!r} to "
                "'capabilities' in its _manifest.json",
            )
        stub = self._stubs.get(name) or self._stubs.get(name.split(".", 1)[0] + ".*")
        if stub is None and name.startswith("send."):
            stub = functools.partial(self._record_sent, name)
        if stub is None and name == _TOOLS_CALL:
            return await self._call_own_tool(**args)
        if stub is None:
            raise RefusedError(
                "capability_not_provided",
                f"capability {name} is not provided by this test harness; stub it with "
                f"harness.stub_capability({name!r}, handler)",
            )
        try:
            value = stub(**args)
            value = (await value) if inspect.isawaitable(value) else value
        except Exception as exc:
            message = f"capability {name} failed: {type(exc).__name__}: {exc}"
            raise RefusedError("capability_failed", message) from None
        if name == _TOOLS_CALL:  # a stub answers as a tool would: text, a dict, a result...
            return wire.result_to_wire(normalize_result(str(args.get("name", "")), value))
        return value

    async def _call_own_tool(
        self, name: str = "", arguments: Any = None, timeout_ms: int | None = None, **_: Any
    ) -> dict[str, Any]:
        """``ctx.call_tool`` with no stub: the plugin's own tools run, as the host allows."""
        if not any(d.get("name") == name for d in self.tools):
            raise RefusedError(
                "capability_denied",
                f"plugin {self.plugin_id} may not call tool {name}: this harness runs only "
                f"the plugin's own tools; stub {_TOOLS_CALL!r} to answer for others",
            )
        if self._nested_calls >= _NESTED_CALL_LIMIT:
            message = f"the chain of tool calls is deeper than {_NESTED_CALL_LIMIT} nested calls"
            raise RefusedError("capability_denied", message)
        self._nested_calls += 1
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else arguments or {}
            if not isinstance(args, dict):
                raise ValueError(f"arguments of tool {name!r} must be an object")
            result = await self.call(name, args, timeout=timeout_ms / 1000 if timeout_ms else None)
        except ValueError as exc:  # bad JSON, or arguments the host would refuse
            result = ToolExecutionResult.failure(name, str(exc), "invalid_arguments")
        finally:
            self._nested_calls -= 1
        return wire.result_to_wire(result)

    def _record_sent(self, capability: str, **args: Any) -> bool:
        self.sent.append(SentMessage(capability, str(args.get("stream_id", "")), args))
        return True

    def _record_progress(self, body: Any) -> None:
        if isinstance(body, dict):
            self.progress.append((body["progress"], body.get("total"), body.get("message")))

    def _record_logs(self, body: Any) -> None:
        records = body.get("records") if isinstance(body, dict) else None
        for record in records or []:
            level = int(record.get("level", logging.INFO))
            entry = PluginLog(level, str(record.get("logger", "")), str(record.get("message", "")))
            self.logs.append(entry)
            # The logger names the host uses, so pytest's log capture shows them alike.
            source = "plugin." + self.plugin_id if record.get("plugin") else "runner.harness"
            logging.getLogger(f"plughost.{source}").log(level, "%s", entry.message)


def _merged(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` over ``base``; tables present in both are merged key by key."""
    merged = dict(base)
    for key, value in override.items():
        current = merged.get(key)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            merged[key] = _merged(current, value)
        else:
            merged[key] = value
    return merged


def _fingerprint(config: Mapping[str, Any]) -> str:
    text = json.dumps(config, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _fill_defaults(schema: Mapping[str, Any], arguments: dict[str, Any]) -> None:
    """Add each declared top-level default that was not sent, as the host's registry does.

    (The SDK cannot import the host; ``plughost.tools.defaults`` is the host's side.)
    """
    properties = schema.get("properties")
    for name, fragment in properties.items() if isinstance(properties, Mapping) else ():
        if isinstance(fragment, Mapping) and "default" in fragment and name not in arguments:
            arguments[name] = copy.deepcopy(fragment["default"])


def _check_arguments(tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
    """Refuse what the host's registry refuses before a call reaches the plugin."""
    properties = schema.get("properties") or {}
    problems = []
    missing = [name for name in schema.get("required") or [] if name not in arguments]
    if missing:
        problems.append("missing required " + ", ".join(map(repr, missing)))
    unknown = [name for name in arguments if name not in properties]
    closed = not any(key in schema for key in _SELF_DESCRIBED)
    if unknown and schema.get("additionalProperties", not closed) is False:
        takes = ", ".join(map(repr, properties)) or "no arguments"
        problems.append(f"unknown {', '.join(map(repr, unknown))} (it takes {takes})")
    if problems:
        raise ValueError(
            f"arguments of tool {tool!r}: {'; '.join(problems)}; the host would refuse this call"
        )
