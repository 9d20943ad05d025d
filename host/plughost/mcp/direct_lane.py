"""DirectLane: a plain gateway call relayed from pipe to pipe, with no task of its own.

A call forwarded beside the SDK's sessions (:mod:`plughost.mcp.forwarding`)
still runs as a task, through the registry's and the provider's coroutines: a
few event-loop turns and layers of awaits per call, most of what the stdio
gateway adds to a call's time. The lane takes the commonest call, an MCP
client's ``tools/call`` of an upstream server's tool, out of that:

- the task that reads the client's line (:mod:`plughost.mcp.stdio_server`)
  decides the call with the same code the registry and the provider run
  (:meth:`~plughost.tools.registry.ToolRegistry.route_now`, the provider's
  route and live connection) and writes the request into the upstream's pipe
  under a fresh id of the upstream tap's (:mod:`plughost.mcp.upstream_tap`);
- the task that reads the upstream's line (:mod:`plughost.mcp.stdio`) checks
  the answer as the SDK's client checks it, turns it into the registry's
  result and back into the client's, exactly as the task would, and writes it
  to the client's pipe under the client's id.

So a call runs in no task of its own, with no await between its steps (but for an
answer whose tool left the session's list mid-call: its check lists the tools first,
in a task, as on the task path). Everything that decides
what a call does is shared with the task path, so the answer is the same; what
the lane cannot decide at once goes that way instead, untouched: a call with
``_meta`` (a progress token), a client that asked for log records, arguments
that fail their check, a hidden or unknown tool,
a tool with an output schema the connection has not listed yet, an upstream that
is not connected or speaks the 2026-07-28 protocol, a pipe that is backed up, a
host shutting down or tracing.

A call on the lane keeps every promise of the task path: its deadline
(``tool_timeout``: the server is told, the client gets the timeout result), the
client's ``notifications/cancelled`` (passed on to the server, no answer), a
server that dies mid-call (the call fails with "lost the connection", never sent
again), what the server asks of the client mid-call (it goes to this call's
client), the registry's call count and observers, and the server's count of
calls a shutdown waits for.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp import Client, MCPError
from pydantic_core import from_json, to_json

from plughost.mcp.call_failures import call_failure
from plughost.mcp.content import result_from_mcp, result_to_mcp
from plughost.mcp.plain_answers import plain_answer
from plughost.mcp.provider import MCPToolProvider
from plughost.mcp.session import is_connection_lost
from plughost.mcp.upstream_tap import (
    CONNECTION_ENDED,
    UpstreamTap,
    checked_result,
    checked_result_later,
    output_checked_now,
)
from plughost.mcp.warm_start import WarmStart
from plughost.tools.client_link import current_client
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import ToolExecutionContext, ToolExecutionResult, ToolSpec

if TYPE_CHECKING:
    from plughost.mcp.client import MCPConnection
    from plughost.mcp.client_link import MCPClientLink
    from plughost.mcp.client_relay import ClientRelay
    from plughost.mcp.registry_server import RegistryMCPServer

__all__ = ["DirectLane", "answer_line"]

log = logging.getLogger(__name__)

_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
_PARAMS = frozenset({"name", "arguments"})
_MARK = b'"tools/call"'
# Every MCP client's call runs in this context (RegistryMCPServer._invoke): its tools are those.
_AVAILABLE = ToolExecutionContext(platform="mcp").availability()


@dataclass(slots=True, eq=False)
class _Call:
    """One call on the lane, from its request written to its answer."""

    client_id: types.RequestId
    name: str
    spec: ToolSpec
    server: str
    target: str
    timeout: float
    connection: MCPConnection
    client: Client
    tap: UpstreamTap
    upstream_id: str
    started: float
    link: _LazyLink
    calling: AbstractContextManager[None]
    registry: ToolRegistry
    timer: asyncio.TimerHandle | None = None
    later: asyncio.Task[None] | None = None  # the output schema check, when it must list first
    answered: bool = False  # the client has the server's answer, as its check shaped it


class DirectLane:
    """The lane of one stdio client of ``plughost serve`` (see the module doc).

    Args:
        bridge: The server whose calls these are.
        relay: The client's relay: its links, and whether its calls may be taken.
        takes: Whether a call with these params may be taken beside the session now.
        respond: The client's answer to its call, shaped for its protocol version.
        version: The client's protocol version: an answer the server shaped for this
            very version is written as the server's check left it (see :meth:`_finish`).
        write_now: Writes one line to the client at once; False when it cannot.
        count: Called once for each call taken.
    """

    def __init__(
        self,
        bridge: RegistryMCPServer,
        relay: ClientRelay,
        takes: Callable[[Mapping[str, Any]], bool],
        respond: Callable[[types.RequestId, types.CallToolResult], types.JSONRPCMessage],
        version: Callable[[], str | None],
        write_now: Callable[[bytes], bool],
        count: Callable[[], None],
    ) -> None:
        self._bridge = bridge
        self._relay = relay
        self._takes = takes
        self._respond = respond
        self._version = version
        self._write_now = write_now
        self._count = count
        self._calls: dict[types.RequestId, _Call] = {}
        self._open = True

    # --- the client's side ----------------------------------------------------------------

    def take_line(self, line: bytes) -> bool:
        """Start the call ``line`` holds if it is one for the lane; False leaves it be."""
        if _MARK not in line or not self._open:
            return False
        try:
            # the session's own parser: a line it refuses is never taken
            message = from_json(line, allow_inf_nan=False)
        except ValueError:
            return False  # the session's parser says what is wrong with it
        if type(message) is not dict or message.keys() != _KEYS:
            return False
        request_id, params = message["id"], message["params"]
        if (
            message["jsonrpc"] != "2.0"
            or message["method"] != "tools/call"
            or type(request_id) not in (str, int)
            or type(params) is not dict
            or not _PARAMS.issuperset(params)
            or request_id in self._calls
        ):
            return False
        name, arguments = params.get("name"), params.get("arguments")
        if type(name) is not str or not (arguments is None or type(arguments) is dict):
            return False
        if not self._takes(params):
            return False
        try:
            return self._start(request_id, name, arguments or {})
        except Exception:  # a fault of ours before the write: the task path answers instead
            log.exception("mcp call could not start on the direct lane tool=%s", name)
            return request_id in self._calls  # written, and so answered here

    def _start(self, request_id: types.RequestId, name: str, arguments: dict[str, Any]) -> bool:
        registry: object = self._bridge.registry
        if isinstance(registry, WarmStart):  # served from the catalogue until it is live
            registry = registry.registry if registry.live.is_set() else None
        if not isinstance(registry, ToolRegistry):  # another source: its own invoke decides
            return False
        routed = registry.route_now(name, arguments, _AVAILABLE)
        if routed is None:
            return False
        route, values = routed
        provider = route.provider
        if not isinstance(provider, MCPToolProvider):
            return False
        target = provider.forward_target(name)
        if target is None:
            return False
        mcp_route, connection, client, tap = target
        if not output_checked_now(client, mcp_route.target):
            return False
        if self._relay.wants_logs:  # the task path runs the link's log sender
            return False
        link = _LazyLink(self._relay, request_id, name)
        token = current_client.set(link)
        try:
            calling = provider.calling(mcp_route.server)
        finally:
            current_client.reset(token)
        call = _Call(
            request_id,
            name,
            route.spec,
            mcp_route.server,
            mcp_route.target,
            connection.config.tool_timeout,
            connection,
            client,
            tap,
            "",
            time.perf_counter(),
            link,
            calling,
            registry,
        )
        loop = asyncio.get_running_loop()
        # Nothing below may fail once the request is written: it would be sent twice.
        upstream_id = tap.send_now(
            {"name": mcp_route.target, "arguments": values},
            lambda outcome: self._settle(call, outcome),
        )
        if upstream_id is None:
            return False
        call.upstream_id = upstream_id
        self._calls[request_id] = call
        calling.__enter__()
        self._bridge.calls.__enter__()
        registry.call_began()
        call.timer = loop.call_later(call.timeout, self._timed_out, call)
        self._count()
        log.debug(
            "mcp call answered beside the session tool=%s id=%s lane=direct", name, request_id
        )
        return True

    def cancel(self, request_id: object) -> bool:
        """The client cancelled ``request_id``: if it is the lane's, the server is told."""
        if not isinstance(request_id, str | int) or isinstance(request_id, bool):
            return False
        call = self._calls.get(request_id)
        if call is None:
            return False
        self._withdraw(call)
        self._end(call, None)  # cancelled: never answered, as the spec asks
        return True

    def close(self) -> None:
        """The client is gone: every call on the lane is cancelled at its server."""
        self._open = False
        for request_id in list(self._calls):
            self.cancel(request_id)

    # --- the server's side ----------------------------------------------------------------

    def _settle(self, call: _Call, outcome: object) -> None:
        """The upstream answered (or its connection closed): answer the client."""
        if self._calls.get(call.client_id) is not call:
            return
        if isinstance(outcome, dict) and not output_checked_now(call.client, call.target):
            # The tool left the session's cache mid-call: its check lists the tools first, in
            # a task, as on the task path; the call's deadline and cancel still apply meanwhile.
            call.later = asyncio.get_running_loop().create_task(self._check_later(call, outcome))
            return
        del self._calls[call.client_id]
        try:
            result = self._result(call, outcome)
        except Exception as exc:  # as run_call: a fault is a failed result, never a lost call
            log.exception("mcp tool call failed in the registry tool=%s", call.name)
            message = f"Tool {call.name} could not be run: {type(exc).__name__}: {exc}"
            result = ToolExecutionResult.failure(call.name, message, "registry_error")
        self._finish(call, result)

    async def _check_later(self, call: _Call, outcome: dict[str, Any]) -> None:
        try:
            checked = await checked_result_later(call.client, call.target, outcome)
            result = _completed(call, result_from_mcp(call.name, checked))
        except Exception as exc:
            error: Exception = exc
            if is_connection_lost(exc):  # as the task path reads a connection gone mid-check
                error = call.connection.lost_during(call.client, _as_mcp_error(exc))
            result = _completed(
                call, call_failure(call.name, call.server, call.target, call.timeout, error)
            )
        if self._calls.get(call.client_id) is call:
            del self._calls[call.client_id]
            self._finish(call, result)

    def _timed_out(self, call: _Call) -> None:
        if self._calls.get(call.client_id) is not call:
            return
        self._withdraw(call)
        failure = call_failure(call.name, call.server, call.target, call.timeout, TimeoutError())
        self._finish(call, _completed(call, failure))

    def _withdraw(self, call: _Call) -> None:
        """Forget ``call`` and tell its server it is abandoned (a cancel, or its deadline)."""
        del self._calls[call.client_id]
        if call.later is not None:
            call.later.cancel()
        call.tap.cancel_now(call.upstream_id, "the caller cancelled the call")

    def _finish(self, call: _Call, result: ToolExecutionResult) -> None:
        """Count the call's end, then answer it: run by a pipe reader, so nothing escapes.

        A call :meth:`_result` answered already (the server's answer, passed on) is
        only counted here.
        """
        self._end(call, result)
        if call.answered:
            return
        message: types.JSONRPCMessage
        try:
            message = self._respond(call.client_id, result_to_mcp(result))
            line = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
        except Exception as exc:  # as the task path answers a fault of ours
            log.exception("mcp tool call failed beside the session tool=%s", call.name)
            error = types.ErrorData(code=types.INTERNAL_ERROR, message=str(exc))
            message = types.JSONRPCError(jsonrpc="2.0", id=call.client_id, error=error)
            line = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
        self._answer(line)

    def _answer(self, line: bytes) -> None:
        if not self._write_now(line + b"\n"):
            log.debug("mcp answer dropped: the client's stream is closed")

    def _pass_on(self, call: _Call, shaped: dict[str, Any]) -> None:
        """Answer at once with the server's answer as its check shaped it, if the versions match.

        The long way (``respond``) dumps the typed answer and shapes it again for
        the client's version: for a client of the server's own version that is the
        shaped answer the check made already. Written before the call's result is
        typed and counted (:meth:`_finish` counts it), so the client waits for none
        of that; nothing else runs between the two, as no step awaits.
        """
        if self._version() == call.client.protocol_version:
            self._answer(answer_line(call.client_id, shaped))
            call.answered = True

    def _result(self, call: _Call, outcome: object) -> ToolExecutionResult:
        if isinstance(outcome, dict):
            plain = plain_answer(call.client, call.target, outcome)
            if plain is not None:  # the full check's verdict and shape, known at once
                self._pass_on(call, plain)
            if call.answered:  # the record needs only the SDK's type of what was passed on
                checked = types.CallToolResult.model_validate(outcome, by_name=False)
                return _completed(call, result_from_mcp(call.name, checked))
            try:
                checked, shaped = checked_result(call.client, call.target, outcome)
            except Exception as exc:
                return _completed(
                    call, call_failure(call.name, call.server, call.target, call.timeout, exc)
                )
            if shaped is not None:
                self._pass_on(call, shaped)
            return _completed(call, result_from_mcp(call.name, checked))
        error: Exception
        if not isinstance(outcome, types.ErrorData) or outcome is CONNECTION_ENDED:
            error = call.connection.lost_during(call.client)  # with the request in its hands
        else:
            error = MCPError(code=outcome.code, message=outcome.message, data=outcome.data)
            if is_connection_lost(error):  # an answer the task path reads as a lost connection
                error = call.connection.lost_during(call.client, error)
        failure = call_failure(call.name, call.server, call.target, call.timeout, error)
        return _completed(call, failure)

    def _end(self, call: _Call, result: ToolExecutionResult | None) -> None:
        """Release all the call holds, each part whatever another does: nothing escapes."""
        if call.timer is not None:
            call.timer.cancel()
        try:
            try:
                call.calling.__exit__(None, None, None)
            finally:
                call.link.served()  # the call is over: what it still asks of its client ends
        except Exception:
            log.exception("mcp call on the direct lane ended with a fault tool=%s", call.name)
        finally:
            self._bridge.calls.__exit__(None, None, None)
            seconds = time.perf_counter() - call.started
            call.registry.call_ended(call.spec, result, seconds)


class _LazyLink:
    """A lane call's client link, made when first used: most calls never ask their client.

    It is what the upstream's requests mid-call reach (through
    :meth:`~plughost.mcp.provider.MCPToolProvider.calling`): the link the relay
    makes for the call, as on the task path.
    """

    __slots__ = ("_link", "_over", "_relay", "_request_id", "_tool", "client")

    def __init__(self, relay: ClientRelay, request_id: types.RequestId, tool: str) -> None:
        self.client = relay.client  # the relay's one client, as its links name it
        self._relay = relay
        self._request_id = request_id
        self._tool = tool
        self._link: MCPClientLink | None = None
        self._over = False

    def _made(self) -> MCPClientLink:
        if self._link is None:
            self._link = self._relay.link(self._request_id, self._tool)
            if self._over:  # asked after the call ended: refused as any late request
                self._link._served()
        return self._link

    def log(self, level: int, logger: str, message: str) -> None:
        """Dropped: a lane call's client set no log level when it began, and the task
        path's link drops the records of such a call too (it runs no sender)."""

    async def generate(self, request: dict[str, Any]) -> dict[str, Any]:
        return await self._made().generate(request)

    async def elicit(self, asker: str, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        return await self._made().elicit(asker, message, schema)

    def served(self) -> None:
        """The call is over: its link refuses what comes late, made now or later."""
        self._over = True
        if self._link is not None:
            self._link._served()


def answer_line(request_id: types.RequestId, shaped: dict[str, Any]) -> bytes:
    """The client's answer to ``request_id``: ``shaped``, the answer its check shaped.

    The same JSON the long way writes for a client of the server's version
    (``tests/host/mcp/test_direct_lane.py`` compares them), which also states
    ``isError: false`` where the server left it out.
    """
    result = shaped if "isError" in shaped else {**shaped, "isError": False}
    return to_json({"jsonrpc": "2.0", "id": request_id, "result": result})


def _as_mcp_error(exc: Exception) -> MCPError | None:
    return exc if isinstance(exc, MCPError) else None


def _completed(call: _Call, result: ToolExecutionResult) -> ToolExecutionResult:
    """The provider's own finishing touches, as on the task path."""
    result.metadata = {"server": call.server, "original_name": call.target, **result.metadata}
    result.tool_name = call.name
    return result
