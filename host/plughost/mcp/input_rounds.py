"""Sampling and elicitation for 2026-07-28 clients: a plugin call parked between rounds.

A 2026-07-28 connection has no channel for a request from the server in the
middle of a call. The server asks instead by ending the ``tools/call`` with an
``input_required`` result (``inputRequests`` plus an opaque ``requestState``);
the client answers the requests and calls again with ``inputResponses`` and
the same ``requestState``. A plugin call cannot be replayed from the start (it
may have had effects), so it is parked: the call keeps running in its runner,
awaiting the answer, while the client has no request open. :class:`InputRounds`
runs such calls as tasks of their own and answers each round with what the
call does next: its result, or the next ``input_required``.

The state is 256 random bits, single use, held only by this server process,
and bound to the tool name and the arguments of the call (the 2026-07-28
protocol has no session on HTTP: the state itself is what names the call).
A state that is unknown, used, expired, or presented with another tool or
other arguments is refused with ``-32602`` and a message that says so; a
refused foreign state leaves the parked call untouched for its own client.
A parked call that is not resumed within the timeout is cancelled in its
runner, as a ``notifications/cancelled`` would cancel it.

At most ``max_parked`` calls wait for a retry at once. The protocol has no
session to charge them to, so without a bound one client could keep any number
of plugin calls alive until their timeouts; past it, a call's question is
refused to the plugin (its ``ctx.llm.generate`` or ``ctx.elicit`` raises, saying
why) and the call goes on without parking.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import secrets
from collections.abc import Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from plughost.tools.client_link import ClientRequestError
from plughost_sdk.models import ToolExecutionResult

__all__ = [
    "DEFAULT_INPUT_TIMEOUT",
    "DEFAULT_MAX_PARKED",
    "InputRounds",
    "ParkedCall",
    "asks_in_rounds",
]

log = logging.getLogger(__name__)

DEFAULT_INPUT_TIMEOUT: Final = 300.0
"""Seconds a parked call waits for the client's retry before it is cancelled."""
DEFAULT_MAX_PARKED: Final = 256
"""Calls waiting for a client's retry at once, at most, per server."""

_STALE = "Invalid requestState: unknown, already used, or expired (a parked call is cancelled "


@dataclass
class _Ask:
    key: str
    request: types.CreateMessageRequest | types.ElicitRequest
    answer: asyncio.Future[Mapping[str, Any]]


@dataclass
class ParkedCall:
    """One plugin call that runs across several ``tools/call`` requests of one client."""

    binding: str
    task: asyncio.Task[ToolExecutionResult] | None = None
    relink: Callable[[ServerRequestContext[Any]], None] | None = None
    """Moves the call's client link to the retry's request (its logs go there)."""
    _asks: list[_Ask] = field(default_factory=list)
    _asked: asyncio.Event = field(default_factory=asyncio.Event)
    _count: int = 0

    async def ask(
        self, request: types.CreateMessageRequest | types.ElicitRequest
    ) -> Mapping[str, Any]:
        """From inside the plugin call: ask the client, wait for its answer (a raw mapping)."""
        self._count += 1
        ask = _Ask(f"{request.method}#{self._count}", request, asyncio.Future())
        self._asks.append(ask)
        self._asked.set()
        return await ask.answer

    async def next_step(self) -> ToolExecutionResult | list[_Ask]:
        """Wait for the call to finish or to ask something; the asks are handed out once."""
        assert self.task is not None
        asked = asyncio.ensure_future(self._asked.wait())
        try:
            await asyncio.wait({self.task, asked}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            asked.cancel()
        if self._asks:
            await asyncio.sleep(0)  # asks that arrived in the same loop turn travel together
            asks, self._asks = self._asks, []
            self._asked.clear()
            return asks
        return self.task.result()

    def answer(self, asks: list[_Ask], responses: Mapping[str, Any]) -> None:
        """Hand each ask its response; one the client left out fails with the reason."""
        for ask in asks:
            response = responses.get(ask.key)
            if ask.answer.done():
                continue
            if isinstance(response, Mapping):
                ask.answer.set_result(response)
            else:
                ask.answer.set_exception(
                    ClientRequestError(f"the MCP client retried without a response to {ask.key}")
                )

    @staticmethod
    def refuse(asks: list[_Ask], reason: str) -> None:
        """Fail each ask with ``reason``: the plugin's call goes on without an answer."""
        for ask in asks:
            if not ask.answer.done():
                ask.answer.set_exception(ClientRequestError(reason))


@dataclass
class _Parking:
    call: ParkedCall
    asks: list[_Ask]
    expiry: asyncio.TimerHandle


class InputRounds:
    """The parked calls of one MCP server, keyed by the request state handed to the client."""

    def __init__(
        self, timeout: float = DEFAULT_INPUT_TIMEOUT, max_parked: int = DEFAULT_MAX_PARKED
    ) -> None:
        if timeout <= 0:
            raise ValueError(f"the input timeout must be positive, got {timeout}")
        if max_parked < 1:
            raise ValueError(f"max_parked must be at least 1, got {max_parked}")
        self.timeout = timeout
        self.max_parked = max_parked
        self._full = False  # at the cap since the last refusal was logged
        self._parked: dict[str, _Parking] = {}
        self._tasks: set[asyncio.Task[ToolExecutionResult]] = set()

    def start(
        self,
        params: types.CallToolRequestParams,
        run: Callable[[ParkedCall], Coroutine[Any, Any, ToolExecutionResult]],
    ) -> ParkedCall:
        """Start the plugin call as a task that outlives this request."""
        call = ParkedCall(_binding(params))
        call.task = asyncio.create_task(run(call), name=f"mcp-rounds:{params.name}")
        self._tasks.add(call.task)
        call.task.add_done_callback(self._tasks.discard)
        return call

    def resume(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> ParkedCall:
        """Take the call a retry's ``requestState`` names and deliver the client's responses."""
        state = params.request_state or ""
        parking = self._parked.get(state)
        if parking is None:
            raise MCPError(INVALID_PARAMS, _STALE + f"after {self.timeout:g} s without a retry)")
        if parking.call.binding != _binding(params):
            raise MCPError(
                INVALID_PARAMS,
                "Invalid requestState: it belongs to a call of another tool or with other "
                "arguments (retry with the tool name and arguments of the original call)",
            )
        del self._parked[state]
        parking.expiry.cancel()
        if parking.call.relink is not None:
            parking.call.relink(ctx)
        parking.call.answer(parking.asks, _responses(ctx, params))
        return parking.call

    async def advance(self, call: ParkedCall) -> ToolExecutionResult | types.InputRequiredResult:
        """This round's answer: the call's result, or its questions under a new state.

        A client that cancels the request while the call runs cancels the call.
        While ``max_parked`` calls already wait for a retry, the call's questions are
        refused to the plugin instead, and the call goes on.
        """
        while True:
            try:
                step = await call.next_step()
            except asyncio.CancelledError:
                self._cancel(call, "the request was cancelled")
                raise
            if isinstance(step, ToolExecutionResult):
                return step
            if len(self._parked) < self.max_parked:
                self._full = False
                break
            if not self._full:  # once per spell at the cap: a plugin may ask in a loop
                self._full = True
                log.warning(
                    "mcp calls not parked: %d already wait for a client's answer "
                    "([serve] mcp_max_parked_calls); plugins' questions are refused until one "
                    "is answered or expires",
                    len(self._parked),
                )
            call.refuse(
                step,
                f"{len(self._parked)} tool calls already wait for an MCP client's answer on "
                "this server, the most it keeps ([serve] mcp_max_parked_calls); the question "
                "was not sent, ask again later or go on without it",
            )
        state = secrets.token_urlsafe(32)
        loop = asyncio.get_running_loop()
        expiry = loop.call_later(self.timeout, self._expire, state)
        self._parked[state] = _Parking(call, step, expiry)
        requests: dict[str, types.InputRequest] = {ask.key: ask.request for ask in step}
        return types.InputRequiredResult(input_requests=requests, request_state=state)

    def _expire(self, state: str) -> None:
        parking = self._parked.pop(state, None)
        if parking is not None:
            self._cancel(parking.call, f"no retry within {self.timeout:g} s")

    @staticmethod
    def _cancel(call: ParkedCall, reason: str) -> None:
        if call.task is not None and not call.task.done():
            log.info("mcp parked call cancelled reason=%s", reason)
            call.task.cancel()

    def close(self) -> None:
        """Cancel every call still running or parked (the server is stopping)."""
        for parking in self._parked.values():
            parking.expiry.cancel()
        self._parked.clear()
        for task in list(self._tasks):
            task.cancel()

    @property
    def parked(self) -> int:
        """Calls waiting for a client's retry."""
        return len(self._parked)

    @contextlib.contextmanager
    def open(self) -> Iterator[InputRounds]:
        """Inside, rounds may run; on the way out, every call still held is cancelled."""
        try:
            yield self
        finally:
            self.close()


def asks_in_rounds(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether a ``tools/call`` runs in rounds: a 2026-07-28 client that offers either.

    Other calls run as they always did, in the request's own task.
    """
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    wanted = (
        types.ClientCapabilities(sampling=types.SamplingCapability()),
        types.ClientCapabilities(elicitation=types.ElicitationCapability()),
    )
    return any(ctx.session.check_client_capability(c) for c in wanted)


def _binding(params: types.CallToolRequestParams) -> str:
    arguments = json.dumps(params.arguments or {}, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(arguments.encode()).hexdigest()
    return f"{params.name}\0{digest}"


def _responses(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> Mapping[str, Any]:
    raw = (ctx.params or {}).get("inputResponses")
    if isinstance(raw, Mapping):
        return raw
    typed = params.input_responses or {}
    return {key: value.model_dump(by_alias=True, mode="json") for key, value in typed.items()}
