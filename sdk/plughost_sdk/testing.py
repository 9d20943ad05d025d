"""The plugin author's test kit: load one plugin folder in a real runner and call its tools.

::

    from plughost_sdk.testing import PluginTestHarness

    async def test_notify_posts_to_the_chat() -> None:
        async with PluginTestHarness("plugins/notifier") as harness:
            result = await harness.call("notify", {"text": "hi"}, stream_id="chat-1")
        assert result.success
        assert harness.sent[0].text == "[bot] hi"

:class:`PluginTestHarness` is a minimal host for one plugin. It starts
``python -m plughost_runner`` (the runner the host uses, started by module
name because the SDK never imports it), speaks the protocol of
:mod:`plughost_sdk.wire` over a real ZeroMQ socket, and answers the plugin's
capability calls from stubs after checking that the manifest lists them, as
the host does. ``ctx.send.*`` calls are recorded in
:attr:`PluginTestHarness.sent`; ``ctx.call_tool`` runs the plugin's own tools
(stub ``tools.call`` to answer for other tools); any other capability must be
stubbed with :meth:`PluginTestHarness.stub_capability`.

What it leaves out: restarting a crashed runner, watching files, scrubbing the
environment, and casting argument types (the host turns ``"60"`` into ``60``
for an integer parameter; pass the values the handler should receive).

It needs the ``testing`` extra (``pip install "plughost-sdk[testing]"``: pyzmq
and plughost-runner). pyzmq is imported when a harness starts, not with this module.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import hmac
import inspect
import json
import logging
import os
import secrets
import shutil
import sys
import tempfile
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from plughost_sdk import __version__ as sdk_version
from plughost_sdk import wire
from plughost_sdk.errors import (
    ManifestError,
    PluginError,
    PluginLoadError,
    ProtocolError,
    RunnerCrashedError,
    RunnerStartError,
)
from plughost_sdk.manifest import Manifest, load_manifest, version_in_range
from plughost_sdk.models import ToolExecutionResult
from plughost_sdk.results import normalize_result

if TYPE_CHECKING:
    import zmq.asyncio

__all__ = ["CapabilityStub", "LoadFailure", "PluginLog", "PluginTestHarness", "SentMessage"]

log = logging.getLogger(__name__)

RUNNER_MODULE = "plughost_runner"
TOKEN_VARIABLE = "PLUGHOST_RUNNER_TOKEN"
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


class _Refused(Exception):
    """A request answered with a wire error, in either direction."""

    def __init__(self, code: wire.ErrorCode | str, message: str) -> None:
        super().__init__(message)
        self.error = wire.WireError(code=code, message=message, details={})


class PluginTestHarness:
    """A minimal host for one plugin folder, for tests.

    Attributes:
        plugin_id: The manifest's id (the folder name until the manifest is read).
        manifest: The validated manifest, or None if it is invalid.
        config: The configuration the plugin was given.
        tools: The plugin's tool declarations, as the runner reported them.
        sent: Messages the plugin sent through ``ctx.send.*``.
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
        self.sent: list[SentMessage] = []
        self.logs: list[PluginLog] = []
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
        self._context: zmq.asyncio.Context | None = None
        self._socket: zmq.asyncio.Socket | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._server: asyncio.Task[None] | None = None
        self._peer: bytes | None = None
        self._ready: asyncio.Future[dict[str, Any]] | None = None
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._next_id = 0
        self._nested_calls = 0
        self._exit_reason = ""
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
        zmq = _import_zmq()
        self._root = Path(tempfile.mkdtemp(prefix="plughost-test-"))  # mode 0700: private
        self._context = zmq.asyncio.Context()
        self._socket = socket = self._context.socket(zmq.ROUTER)
        socket.setsockopt(zmq.LINGER, 0)
        socket.setsockopt(zmq.ROUTER_MANDATORY, 1)
        socket.bind(f"ipc://{self._root}/runner.sock" if zmq.has("ipc") else "tcp://127.0.0.1:*")
        self._ready = asyncio.get_running_loop().create_future()
        self._process = await self._spawn(socket.getsockopt_string(zmq.LAST_ENDPOINT))
        self._server = asyncio.create_task(self._serve())
        try:
            async with asyncio.timeout(self._start_timeout):
                return await self._ready
        except TimeoutError:
            raise RunnerStartError(
                f"the runner was not ready within {self._start_timeout:g} s{self._output_tail()}"
            ) from None

    async def _spawn(self, endpoint: str) -> asyncio.subprocess.Process:
        env = {**os.environ, **self._env, TOKEN_VARIABLE: self._token}
        env.update(PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
        argv = ["--endpoint", endpoint, "--runner-id", "harness", "--parent-pid", str(os.getpid())]
        # The output file gets only what bypasses the runner's capture: crashes, faulthandler.
        with self._output_file().open("wb") as output:
            return await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", RUNNER_MODULE, *argv),
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=output,
                stderr=asyncio.subprocess.STDOUT,
            )

    def _output_file(self) -> Path:
        return (self._root or Path(tempfile.gettempdir())) / "runner-output.txt"

    def _output_tail(self) -> str:
        try:
            text = self._output_file().read_bytes()[-4000:].decode("utf-8", "replace")
        except OSError:
            return ""
        lines = [line for line in text.splitlines() if line.strip()][-12:]
        return ("; runner output:\n" + "\n".join(lines)) if lines else ""

    def _hello_reply(self) -> dict[str, Any]:
        spec = {
            "plugin_id": self.plugin_id,
            "path": str(self.plugin_dir),
            "config": self.config,
            "config_version": _fingerprint(self.config),
            "data_dir": str(self.data_dir),
            "temp_dir": str(self.temp_dir),
            "on_load_timeout": self._start_timeout,
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
        _check_arguments(tool, declaration.get("parameters_schema") or {}, args)
        # Context that is given wins over a same-named argument; context that is not never does.
        kwargs = {**args, **context, **({"stream_id": stream_id} if stream_id else {})}
        for name, unset in (("stream_id", ""), ("is_group_chat", False), ("message", None)):
            kwargs.setdefault(name, unset)
        if declaration.get("legacy_action"):  # as the host does for an @Action
            kwargs["action_data"] = args
            kwargs.setdefault("reasoning", "")
        timeout_ms = (declaration.get("metadata") or {}).get("timeout_ms")
        budget = timeout or (timeout_ms / 1000 if timeout_ms else self._call_timeout)
        body = {"tool": tool, "arguments": kwargs}
        try:
            reply = await self._request("tool.invoke", body, plugin=self.plugin_id, timeout=budget)
        except TimeoutError:
            message = f"tool {tool} did not finish within {budget:g} s"
            return ToolExecutionResult.failure(tool, message, "timeout")
        except _Refused as refused:
            return ToolExecutionResult.failure(tool, str(refused), refused.error["code"])
        except RunnerCrashedError as exc:
            return ToolExecutionResult.failure(tool, f"the runner died: {exc}", "plugin_crashed")
        return wire.result_from_wire((reply or {}).get("result"))

    def _declaration(self, tool: str) -> dict[str, Any]:
        if self.load_failure is not None:
            raise PluginLoadError(
                f"plugin {self.plugin_id} did not load, so {tool!r} cannot be called: "
                + self.load_failure.describe()
            )
        if self._state != "started":
            raise RuntimeError("use the harness inside 'async with PluginTestHarness(...)'")
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
            await self._request("config.update", body, plugin=self.plugin_id, timeout=12.0)
        except _Refused as refused:
            raise PluginError(f"the plugin rejected the configuration: {refused}") from None
        self.config = data

    async def aclose(self) -> None:
        """Ask the runner to unload the plugin and exit, escalate if it does not, clean up."""
        if self._state == "closed":
            return
        self._state = "closed"
        try:
            await self._stop_runner()
        finally:
            if self._server is not None:
                self._server.cancel()
                (outcome,) = await asyncio.gather(self._server, return_exceptions=True)
                if isinstance(outcome, Exception):
                    log.error("the harness's receive loop failed: %r", outcome)
            if self._socket is not None:
                await self._drain_logs()
                self._socket.close(linger=0)
            if self._context is not None:
                self._context.term()
            if self._root is not None:
                shutil.rmtree(self._root, ignore_errors=True)

    async def _stop_runner(self) -> None:
        """The ladder: ask (``runner.shutdown``), then SIGTERM, then SIGKILL."""
        process = self._process
        if process is None or process.returncode is not None:
            return
        if self._peer is not None and not self._exit_reason:
            try:
                await self._request("runner.shutdown", {"drain": 1.0}, timeout=5.0)
            except (_Refused, RunnerCrashedError, TimeoutError) as exc:
                log.warning("the runner did not accept shutdown: %s", exc)
        for escalate in (None, process.terminate, process.kill):
            with contextlib.suppress(TimeoutError, ProcessLookupError):
                if escalate is not None:
                    escalate()
                async with asyncio.timeout(5.0 if escalate is None else 2.0):
                    await process.wait()
                return

    async def _serve(self) -> None:
        """Receive frames until cancelled; the runner's exit fails whatever still waits."""
        if self._socket is None:
            raise RuntimeError("the harness has no socket")
        async with asyncio.TaskGroup() as group:
            group.create_task(self._watch_exit())
            while True:
                identity, envelope = await self._receive()
                if envelope is None:
                    continue
                if identity != self._peer:
                    self._handshake(group, identity, envelope)
                elif envelope["kind"] == "response":
                    self._resolve(envelope)
                elif envelope["kind"] == "request":
                    group.create_task(self._answer(envelope))
                elif envelope["method"] == "log.batch":
                    self._record_logs(envelope["body"])
                # Heartbeats need no answer: the harness does not watch for hangs.

    async def _receive(self) -> tuple[bytes, wire.Envelope | None]:
        if self._socket is None:
            raise RuntimeError("the harness has no socket")
        parts = await self._socket.recv_multipart()
        try:
            if len(parts) != 2:
                raise ProtocolError(f"expected 2 frame parts, got {len(parts)}")
            return parts[0], wire.decode(parts[1])
        except ProtocolError as exc:
            log.warning("dropped a frame from the runner: %s", exc)
            return parts[0], None

    async def _watch_exit(self) -> None:
        if self._process is None:
            return
        code = await self._process.wait()
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        self._exit_reason = f"the runner {how}{self._output_tail()}"
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(RunnerStartError(f"before it was ready, {self._exit_reason}"))
        for future in self._pending.values():
            if not future.done():
                future.set_exception(RunnerCrashedError(self._exit_reason))

    def _handshake(
        self, group: asyncio.TaskGroup, identity: bytes, envelope: wire.Envelope
    ) -> None:
        """Serve only a hello carrying this spawn's token and our protocol version."""
        body = envelope["body"] if isinstance(envelope["body"], dict) else {}
        token_ok = hmac.compare_digest(str(body.get("token", "")), self._token)
        if envelope["method"] != "runner.hello" or not token_ok or self._peer is not None:
            log.warning("ignored %s from a peer without this spawn's token", envelope["method"])
            return
        if body.get("protocol") != wire.PROTOCOL_VERSION:
            message = (
                f"the runner speaks protocol {body.get('protocol')!r}, this plughost-sdk "
                f"{wire.PROTOCOL_VERSION}; install matching plughost-sdk and plughost-runner"
            )
            error = wire.error_body("protocol_mismatch", message)
            group.create_task(self._send_quietly(wire.response(envelope, error=error), identity))
            return
        self._peer = identity
        group.create_task(self._send_quietly(wire.response(envelope, self._hello_reply())))

    def _resolve(self, envelope: wire.Envelope) -> None:
        future = self._pending.get(envelope["id"])
        if future is None or future.done():
            return
        error = envelope["error"]
        if error is not None:
            future.set_exception(_Refused(error["code"], error["message"]))
        else:
            future.set_result(envelope["body"])

    async def _answer(self, envelope: wire.Envelope) -> None:
        body = envelope["body"] if isinstance(envelope["body"], dict) else {}
        try:
            reply = wire.response(envelope, await self._reply(envelope, body))
        except _Refused as refused:
            reply = wire.response(envelope, error=refused.error)
        await self._send_quietly(reply)

    async def _reply(self, envelope: wire.Envelope, body: dict[str, Any]) -> Any:
        """The body answering a runner request: ``runner.ready`` or ``capability.call``."""
        if envelope["method"] == "runner.ready":
            if self._ready is not None and not self._ready.done():
                self._ready.set_result(body)
            return {"ok": True}
        if envelope["method"] == "capability.call":
            name, args = str(body.get("capability", "")), dict(body.get("args") or {})
            return {"value": await self._capability(envelope["plugin"], name, args)}
        raise _Refused("bad_payload", f"unknown method {envelope['method']!r}")

    async def _capability(self, plugin: str | None, name: str, args: dict[str, Any]) -> Any:
        """Check the call against the manifest, as the host does, then run its stub."""
        if self.manifest is None or plugin != self.plugin_id:
            raise _Refused("capability_denied", f"this harness does not serve plugin {plugin!r}")
        if not self.manifest.allows_capability(name):
            raise _Refused(
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
            raise _Refused(
                "capability_not_provided",
                f"capability {name} is not provided by this test harness; stub it with "
                f"harness.stub_capability({name!r}, handler)",
            )
        try:
            value = stub(**args)
            value = (await value) if inspect.isawaitable(value) else value
        except Exception as exc:
            message = f"capability {name} failed: {type(exc).__name__}: {exc}"
            raise _Refused("capability_failed", message) from None
        if name == _TOOLS_CALL:  # a stub answers as a tool would: text, a dict, a result...
            return wire.result_to_wire(normalize_result(str(args.get("name", "")), value))
        return value

    async def _call_own_tool(
        self, name: str = "", arguments: Any = None, timeout_ms: int | None = None, **_: Any
    ) -> dict[str, Any]:
        """``ctx.call_tool`` with no stub: the plugin's own tools run, as the host allows."""
        if not any(d.get("name") == name for d in self.tools):
            raise _Refused(
                "capability_denied",
                f"plugin {self.plugin_id} may not call tool {name}: this harness runs only "
                f"the plugin's own tools; stub {_TOOLS_CALL!r} to answer for others",
            )
        if self._nested_calls >= _NESTED_CALL_LIMIT:
            message = f"the chain of tool calls is deeper than {_NESTED_CALL_LIMIT} nested calls"
            raise _Refused("capability_denied", message)
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

    def _record_logs(self, body: Any) -> None:
        records = body.get("records") if isinstance(body, dict) else None
        for record in records or []:
            level = int(record.get("level", logging.INFO))
            entry = PluginLog(level, str(record.get("logger", "")), str(record.get("message", "")))
            self.logs.append(entry)
            # The logger names the host uses, so pytest's log capture shows them alike.
            source = "plugin." + self.plugin_id if record.get("plugin") else "runner.harness"
            logging.getLogger(f"plughost.{source}").log(level, "%s", entry.message)

    async def _drain_logs(self) -> None:
        """Read the last log batch, which the runner sends just before it exits."""
        while self._socket is not None and await self._socket.poll(timeout=50):
            identity, envelope = await self._receive()
            if (
                envelope is not None
                and identity == self._peer
                and envelope["method"] == "log.batch"
            ):
                self._record_logs(envelope["body"])

    async def _request(
        self, method: wire.Method, body: Any, *, plugin: str | None = None, timeout: float
    ) -> Any:
        """Send a request and wait for its reply body.

        The runner is given ``timeout`` and the wait is one second longer, so that
        the runner's own, more precise, timeout answer normally arrives first.
        """
        if self._exit_reason:
            raise RunnerCrashedError(self._exit_reason)
        self._next_id += 1
        request_id = self._next_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        deadline_ms = max(1, int(timeout * 1000))
        try:
            await self._send(
                wire.request(request_id, method, body, plugin=plugin, deadline_ms=deadline_ms)
            )
            async with asyncio.timeout(timeout + 1.0):
                return await future
        except TimeoutError:
            with contextlib.suppress(RunnerCrashedError):
                await self._send(wire.event("call.cancel", {"id": request_id}))
            raise
        finally:
            self._pending.pop(request_id, None)

    async def _send(self, envelope: wire.Envelope, identity: bytes | None = None) -> None:
        """Send to the runner; zmq errors become RunnerCrashedError here, at the edge."""
        import zmq

        peer = identity or self._peer
        if self._socket is None or peer is None:
            raise RunnerCrashedError("the runner is not connected")
        try:
            await self._socket.send_multipart([peer, wire.encode(envelope)])
        except zmq.ZMQError as exc:
            raise RunnerCrashedError(f"cannot reach the runner: {exc}") from exc

    async def _send_quietly(self, reply: wire.Envelope, identity: bytes | None = None) -> None:
        """Send an answer; a runner that went away no longer needs it."""
        try:
            await self._send(reply, identity)
        except ProtocolError as exc:  # a stub returned something msgpack cannot carry
            message = f"the answer cannot be sent to the plugin: {exc}"
            await self._send_quietly(
                wire.response(reply, error=_Refused("capability_failed", message).error)
            )
        except RunnerCrashedError as exc:
            log.debug("answer to %s not delivered: %s", reply["method"], exc)


def _import_zmq() -> Any:
    try:
        import zmq
        import zmq.asyncio
    except ImportError:
        raise RunnerStartError(
            "the test kit needs pyzmq; pip install 'plughost-sdk[testing]'"
        ) from None
    return zmq


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
