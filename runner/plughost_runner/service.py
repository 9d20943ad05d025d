"""The runner's side of the protocol: one DEALER socket, a dispatch table, background beats.

Lifecycle: connect, ``runner.hello`` (token and protocol version), load the
plugins the host named in its answer, ``runner.ready`` with what loaded and what
failed, then serve requests concurrently until ``runner.shutdown`` or until the
host goes away. Every request gets exactly one response; a failure inside a
handler is a failed result, and a failure of the protocol is a wire error.

:class:`RunnerService` is one class written in three modules, so that each reads
in one sitting and the call path reads on its own. Here: requests to the host,
frames from it, serving a request (``_on_frame`` -> ``_start`` -> ``_serve`` ->
``_on_invoke`` or ``_on_component``), and loading plugins, each with a
:class:`~plughost_runner.link.bridge.Bridge` to this service. Start-up, heartbeats,
log forwarding, health and shutdown live in :mod:`plughost_runner.link.lifecycle`;
resources, prompts and configuration updates in
:mod:`plughost_runner.link.plugin_requests`; the wire error a handler answers with
in :mod:`plughost_runner.link.replies`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

import zmq

from plughost_runner.link.bridge import Bridge, HostError
from plughost_runner.link.lifecycle import ServiceLifecycle
from plughost_runner.link.plugin_requests import PluginRequests
from plughost_runner.link.pulse import Pulse
from plughost_runner.link.replies import Reply
from plughost_runner.link.transport import Transport
from plughost_runner.plugins.components import INVOKABLE_TYPES, call_component, dynamic_handler
from plughost_runner.plugins.invoker import Invoker
from plughost_runner.plugins.llm_providers import LLM_PROVIDER, call_provider
from plughost_runner.plugins.loader import LoadedPlugin, LoadFailure, PluginSpec, load_plugin
from plughost_runner.process.capture import CancelFlag, LogCollector, current_call, current_cancel
from plughost_runner.process.credentials import Credentials
from plughost_runner.process.eager import step_now
from plughost_sdk import wire
from plughost_sdk.errors import ProtocolError

__all__ = ["RunnerService"]

log = logging.getLogger("plughost_runner")

_Handler = Callable[[wire.Envelope], Awaitable[Any]]
_CALLS = frozenset({"tool.invoke", "component.invoke", "resource.read", "prompt.get"})


class RunnerService(ServiceLifecycle, PluginRequests):
    """Serves one host over one socket until told to stop."""

    def __init__(
        self,
        endpoint: str,
        runner_id: str,
        credentials: Credentials,
        collector: LogCollector,
        offers: list[PluginSpec] | None = None,
    ) -> None:
        self._runner_id = runner_id
        self._credentials = credentials
        self._collector = collector
        # A remote runner (plughost_runner.remote) found its plugins itself and offers them;
        # the host answers which it accepts. A spawned runner loads what the host names.
        self._offers = offers
        routing_id = os.urandom(16) if offers is not None else None
        self._transport = Transport(endpoint, curve=credentials.curve, routing_id=routing_id)
        credentials.curve = None  # the socket has the keys now
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._plugins: dict[str, LoadedPlugin] = {}
        self._invoker = Invoker(lock=self._transport.lock)
        self._transport.guarded = self._in_plugin_step
        self._pulse: Pulse | None = None
        self._beat_seq = 0
        self._served = 0  # requests answered, so an idle beat knows whether to trim the heap
        self._trimmed_at = 0
        self._next_id = 0
        self._max_bytes = wire.DEFAULT_MAX_MESSAGE_BYTES
        self._heartbeat_interval = 0.5
        self._shutting_down = False
        self._stopped = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._progress_dropped = 0
        self._handlers: dict[str, _Handler] = {
            "tool.invoke": self._on_invoke,
            "component.invoke": self._on_component,
            "resource.read": self._on_read_resource,
            "prompt.get": self._on_get_prompt,
            "plugins.load": self._on_load,
            "config.update": self._on_config_update,
            "runner.health": self._on_health,
            "runner.shutdown": self._on_shutdown,
        }

    async def request(
        self, method: wire.Method, body: Any, *, plugin: str | None = None, timeout: float
    ) -> Any:
        """Send a request to the host and wait for its response body.

        Raises:
            HostError: the host answered with an error.
            TimeoutError: no answer within ``timeout``.
        """
        self._next_id += 1
        request_id = self._next_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        envelope = wire.request(
            request_id, method, body, plugin=plugin, deadline_ms=int(timeout * 1000)
        )
        try:
            await self._transport.send(wire.encode_parts(envelope))
            async with asyncio.timeout(timeout):
                return await future
        finally:
            self._pending.pop(request_id, None)

    def send_progress(
        self,
        call: int,
        plugin_id: str,
        progress: float,
        total: float | None,
        message: str | None,
    ) -> None:
        """Send a ``progress`` event for call ``call``, from the loop's thread or any other."""
        body = {"progress": progress, "total": total, "message": message}
        frame = wire.encode(wire.event("progress", body, request_id=call, plugin=plugin_id))
        try:
            on_loop = asyncio.get_running_loop() is self._loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            self._send_progress(frame)
        elif self._loop is not None and not self._loop.is_closed():
            # A sync handler's thread: the loop sends it, after what the loop already queued.
            self._loop.call_soon_threadsafe(self._send_progress, frame)

    def _send_progress(self, frame: bytes) -> None:
        if not self._transport.post(frame):
            self._progress_dropped += 1
            log.debug("progress report dropped: the host's queue is full")

    def _on_frame(self, group: asyncio.TaskGroup, parts: list[zmq.Frame]) -> None:
        """One message from the host: the envelope frame, then any blob frames."""
        blobs = [part.buffer for part in parts[1:]] if len(parts) > 1 else []
        try:
            envelopes = wire.decode_many(parts[0].buffer, blobs)
        except ProtocolError as exc:
            log.warning("dropped a frame from the host: %s", exc)
            return
        for envelope in envelopes:
            if envelope["kind"] == "request":  # most messages: straight to serving them
                self._start(group, envelope)
            else:
                self._on_envelope(group, envelope)

    def _on_envelope(self, group: asyncio.TaskGroup, envelope: wire.Envelope) -> None:
        """A response or an event from the host (requests go to :meth:`_start` directly)."""
        if envelope["kind"] == "response":
            self._resolve(envelope)
        elif envelope["method"] == "call.cancel":
            task = self._tasks.get(int((envelope["body"] or {}).get("id", 0)))
            if task is not None:
                task.cancel()
        else:
            self._on_event(group, envelope)

    def _start(self, group: asyncio.TaskGroup, envelope: wire.Envelope) -> None:
        """Serve a request, running its first step now: most calls finish in it.

        A call that finished in its first step needs no more of the loop; one that
        waits joins the task group, which cancels it when the runner stops.
        """
        loop = self._loop or asyncio.get_running_loop()
        task = loop.create_task(self._serve(envelope))
        self._tasks[envelope["id"]] = task
        if self._resting:  # before its first step, which may block the loop
            self._wake()
        step_now(loop, task)
        if not task.done():
            group.create_task(_joined(task))
            return
        failure = None if task.cancelled() else task.exception()
        if failure is not None:
            raise failure  # as the group would have: it ends the runner

    async def _serving(self, group: asyncio.TaskGroup) -> None:
        """Called once the plugins are loaded, before the ready report (a remote runner's watch)."""

    def _on_event(self, group: asyncio.TaskGroup, envelope: wire.Envelope) -> None:
        """An event from the host other than ``call.cancel`` (``runner.rejoin``)."""

    def _cut_off_error(self) -> wire.WireError | None:
        """The answer to a call this runner cancelled itself (a drain ran out), or None."""
        return None

    def _resolve(self, envelope: wire.Envelope) -> None:
        future = self._pending.get(envelope["id"])
        if future is None or future.done():
            return
        if envelope["error"] is not None:
            future.set_exception(HostError(envelope["error"]))
        else:
            future.set_result(envelope["body"])

    async def _serve(self, envelope: wire.Envelope) -> None:
        # Set in this task's own context: its log records and capability calls carry it.
        current_call.set(envelope["id"])
        try:
            handler = self._handlers.get(envelope["method"])
            if handler is None:
                raise Reply("bad_payload", f"unknown method {envelope['method']!r}")
            body = await handler(envelope)
            if envelope["method"] in _CALLS and self._collector.has_news():
                # The call's log records reach the host before its reply, so an MCP
                # client sees them as notifications before the result.
                await self._send_logs()
            parts = self._encode_reply(envelope, body)
        except Reply as reply:
            parts = wire.encode_parts(wire.response(envelope, error=reply.error))
        except asyncio.CancelledError:
            error = self._cut_off_error()
            if error is None:
                return  # the host cancelled the call and no longer waits for it
            parts = wire.encode_parts(wire.response(envelope, error=error))
        except Exception as exc:
            log.exception("runner failed serving %s", envelope["method"])
            error = wire.error_body("internal", f"runner error: {type(exc).__name__}: {exc}")
            parts = wire.encode_parts(wire.response(envelope, error=error))
        finally:
            self._tasks.pop(envelope["id"], None)
            self._served += 1
        if not self._transport.try_post(parts):
            await self._transport.send(parts)

    def _encode_reply(self, envelope: wire.Envelope, body: Any) -> list[bytes | memoryview]:
        try:
            parts = wire.encode_parts(wire.response(envelope, body))
        except ProtocolError as exc:
            message = f"the tool's result cannot be sent to the host ({exc}); return plain data"
            return [
                wire.encode(wire.response(envelope, error=wire.error_body("bad_payload", message)))
            ]
        total = len(parts[0]) if len(parts) == 1 else sum(len(part) for part in parts)
        if total > self._max_bytes:
            limit, size = self._max_bytes / 2**20, total / 2**20
            message = (
                f"the result is {size:.1f} MiB, over the {limit:.0f} MiB message limit; "
                "return less data, or a resource link instead of the bytes"
            )
            error = wire.error_body("message_too_large", message, size=total)
            return [wire.encode(wire.response(envelope, error=error))]
        return parts

    async def _on_invoke(self, envelope: wire.Envelope) -> Any:
        if self._shutting_down:
            raise Reply("shutting_down", "the runner is shutting down; retry the call")
        plugin = self._plugin(envelope)
        body = envelope["body"] or {}
        tool = str(body.get("tool", ""))
        handler = plugin.handlers.get(tool)
        if handler is None:
            raise Reply("tool_not_found", f"plugin {plugin.spec.plugin_id} has no tool {tool!r}")
        timeout = (envelope["deadline_ms"] or 60_000) / 1000
        cancelled = CancelFlag()  # what ctx.cancelled reads, from the handler's thread too
        cancel = current_cancel.set(cancelled)
        try:
            result = await self._invoker.invoke(
                plugin.spec.plugin_id, handler, dict(body.get("arguments") or {}), timeout
            )
        except TimeoutError:
            cancelled.set()
            raise Reply("timeout", f"tool {tool} did not finish within {timeout:g} s") from None
        except asyncio.CancelledError:
            cancelled.set()
            raise
        finally:
            current_cancel.reset(cancel)
        return {"result": wire.fields_to_wire(result)}

    async def _on_component(self, envelope: wire.Envelope) -> Any:
        if self._shutting_down:
            raise Reply("shutting_down", "the runner is shutting down; retry the call")
        plugin = self._plugin(envelope)
        body = envelope["body"] or {}
        kind, name = str(body.get("type", "")), str(body.get("name", ""))
        if kind == LLM_PROVIDER:
            return await self._on_llm_provider(envelope, plugin, name)
        handler = plugin.components.get((kind, name)) if kind in INVOKABLE_TYPES else None
        if handler is None:
            handler = dynamic_handler(plugin.instance, kind, name)
        if handler is None:
            raise Reply(
                "component_not_found",
                f"plugin {plugin.spec.plugin_id} has no {kind} component {name!r}",
            )
        timeout = (envelope["deadline_ms"] or 60_000) / 1000
        arguments = dict(body.get("args") or {})
        call = current_call.set(envelope["id"])
        try:
            return await call_component(
                self._invoker, plugin.spec.plugin_id, handler, arguments, timeout
            )
        except TimeoutError:
            raise Reply("timeout", f"{kind} {name} did not finish within {timeout:g} s") from None
        finally:
            current_call.reset(call)

    async def _on_llm_provider(
        self, envelope: wire.Envelope, plugin: LoadedPlugin, client_type: str
    ) -> dict[str, Any]:
        provider = plugin.llm_providers.get(client_type)
        if provider is None:
            raise Reply(
                "component_not_found",
                f"plugin {plugin.spec.plugin_id} has no LLM provider {client_type!r}",
            )
        timeout = (envelope["deadline_ms"] or 60_000) / 1000
        arguments = dict((envelope["body"] or {}).get("args") or {})
        call = current_call.set(envelope["id"])
        try:
            return await call_provider(
                self._invoker, plugin.spec.plugin_id, provider, arguments, timeout
            )
        except TimeoutError:
            raise Reply(
                "timeout", f"LLM provider {client_type} did not finish within {timeout:g} s"
            ) from None
        finally:
            current_call.reset(call)

    async def _on_load(self, envelope: wire.Envelope) -> Any:
        specs = [PluginSpec.from_wire(p) for p in (envelope["body"] or {}).get("plugins", [])]
        return await self._load(specs)

    async def _load(self, specs: list[PluginSpec]) -> dict[str, Any]:
        loaded: list[dict[str, Any]] = []
        failed: list[dict[str, Any]] = []
        for spec in specs:
            outcome = await load_plugin(spec, Bridge(self, spec.plugin_id))
            if isinstance(outcome, LoadFailure):
                log.error(
                    "plugin %s failed at %s: %s", spec.plugin_id, outcome.stage, outcome.reason
                )
                failed.append(outcome.to_wire())
            else:
                self._plugins[spec.plugin_id] = outcome
                loaded.append(outcome.summary())
        return {"loaded": loaded, "failed": failed, "pid": os.getpid()}

    def _plugin(self, envelope: wire.Envelope) -> LoadedPlugin:
        plugin = self._plugins.get(envelope["plugin"] or "")
        if plugin is None:
            raise Reply("plugin_not_found", f"plugin {envelope['plugin']!r} is not loaded here")
        return plugin

    def _in_plugin_step(self) -> bool:
        return self._invoker.step is not None


async def _joined(task: asyncio.Task[None]) -> None:
    """Wait for a request's task in the task group (cancelling this cancels the task)."""
    await task
