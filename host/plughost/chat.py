"""ChatSession: one conversation of the embedder's turn loop, with its context given once.

A bot's turn loop does the same five things every turn: send the model the
tools of this chat, read the tool calls out of the model's message, run them,
turn the results into the next messages, and (with tool search) remember what
the conversation discovered. Each step wants the conversation's session id and
chat context; handed around separately, they are given three times and can
disagree. ``host.session(session_id, stream_id=..., ...)`` binds them once::

    chat = host.session("s1", stream_id="chat-7", user_id="u1", platform="qq")
    tools = await chat.tools()                      # what to send this turn
    calls = chat.openai_calls(response.choices[0].message)
    results = await chat.run(calls)                 # one turn's calls, in order
    messages += chat.openai_turn(calls, results)    # tool messages, then media

Every call goes through the host's one ``ToolRegistry``, so visibility,
argument checks, deadlines and ``tool_search``'s discoveries hold exactly as
for ``host.tools.invoke``. :func:`build_tool_search` is how a host's
``tool_search`` setting becomes the service and its built-in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from plughost.settings import ToolSearchSettings
from plughost.tools.batching import run_tool_batch
from plughost.tools.builtin import BuiltinToolProvider
from plughost.tools.history import ResultLimiter, to_anthropic_turn, to_openai_turn
from plughost.tools.model_calls import ModelToolCalls, from_anthropic_message, from_openai_message
from plughost.tools.registry import ToolRegistry
from plughost_sdk import ToolExecutionContext, ToolExecutionResult, ToolInvocation

if TYPE_CHECKING:
    from plughost.search.hints import ToolHint
    from plughost.search.service import ToolSearchService

__all__ = ["ChatSession", "build_tool_search"]

_Calls = ModelToolCalls | Sequence[ToolInvocation]


def build_tool_search(
    registry: ToolRegistry, settings: ToolSearchSettings
) -> ToolSearchService | None:
    """The ``tool_search`` service for ``registry``, its built-in registered; None when off."""
    if not settings.enabled:
        return None
    from plughost.search.service import ToolSearchService  # jieba only for hosts that search
    from plughost.search.strategies import GenericStrategy, make_strategy

    strategy = (
        GenericStrategy(settings.tool_format)
        if settings.strategy == "generic"
        else make_strategy(settings.strategy)
    )
    search = ToolSearchService(
        registry,
        strategy=strategy,
        threshold=settings.threshold,
        always_loaded=settings.always_loaded,
        semantic=settings.semantic,
        embedding_cache=settings.embedding_cache,
        used_together=settings.used_together,
    )
    registry.register_provider(BuiltinToolProvider([search.tool()], provider_name="tool_search"))
    return search


class ChatSession:
    """One conversation: its context, the tools to send it, and its calls run in it."""

    def __init__(
        self,
        tools: ToolRegistry,
        context: ToolExecutionContext,
        search: ToolSearchService | None = None,
    ) -> None:
        if not context.session_id:
            raise ValueError(
                "a chat session needs a session_id: discoveries and call checks are kept "
                "per conversation"
            )
        self.context = context
        self._tools = tools
        self._search = search

    @property
    def session_id(self) -> str:
        """The conversation's id, given once when the session was made."""
        return self.context.session_id

    async def tools(
        self, format: Literal["openai", "anthropic"] = "openai"
    ) -> list[dict[str, Any]]:
        """The tool definitions to send the model this turn.

        With tool search on, what its strategy sends this conversation (core
        tools, ``tool_search`` and what it discovered; ``format`` is then the
        strategy's, set in the host's ``tool_search`` settings). Without, every
        tool this chat may see, in ``format``.
        """
        availability = self.context.availability()
        if self._search is not None:
            return await self._search.definitions(availability, self.session_id)
        return await self._tools.get_llm_definitions(availability, format=format)

    async def hint(self) -> ToolHint | None:
        """The reminder of what this conversation could still load (None without search)."""
        if self._search is None:
            return None
        return await self._search.tool_hint(self.context.availability(), self.session_id)

    async def invoke(
        self, tool_name: str, arguments: dict[str, Any] | str | None = None, *, call_id: str = ""
    ) -> ToolExecutionResult:
        """Call one tool in this conversation, as the model would (never ``trusted``)."""
        call = ToolInvocation(tool_name=tool_name, arguments=arguments or {}, call_id=call_id)
        return await self._tools.invoke(call, self.context)

    async def run(self, calls: _Calls) -> list[ToolExecutionResult]:
        """Run one turn's calls (read-only ones together), results in call order."""
        return await run_tool_batch(self._tools, _invocations(calls), self.context)

    def openai_calls(self, message: Any) -> ModelToolCalls:
        """The tool calls of a Chat Completions assistant message, in this conversation."""
        return from_openai_message(
            message, session_id=self.session_id, stream_id=self.context.stream_id
        )

    def anthropic_calls(self, message: Any) -> ModelToolCalls:
        """The tool calls of a Messages API response, in this conversation.

        Tools that Anthropic's own server-side tool search loaded are recorded
        as discovered by this conversation.
        """
        calls = from_anthropic_message(
            message, session_id=self.session_id, stream_id=self.context.stream_id
        )
        if self._search is not None and calls.discovered:
            self._search.discovery(self.session_id).add(calls.discovered)
        return calls

    def openai_turn(
        self,
        calls: _Calls,
        results: Sequence[ToolExecutionResult],
        *,
        limiter: ResultLimiter | None = None,
    ) -> list[dict[str, Any]]:
        """The Chat Completions messages that answer ``calls``: tool messages, then media."""
        pairs = _pairs(calls, results)
        return to_openai_turn(pairs, limiter=limiter, session_id=self.session_id)

    def anthropic_turn(
        self,
        calls: _Calls,
        results: Sequence[ToolExecutionResult],
        *,
        limiter: ResultLimiter | None = None,
    ) -> list[dict[str, Any]]:
        """The Messages API user message whose ``tool_result`` blocks answer ``calls``."""
        pairs = _pairs(calls, results)
        return to_anthropic_turn(pairs, limiter=limiter, session_id=self.session_id)


def _invocations(calls: _Calls) -> Sequence[ToolInvocation]:
    return calls.invocations if isinstance(calls, ModelToolCalls) else calls


def _pairs(
    calls: _Calls, results: Sequence[ToolExecutionResult]
) -> list[tuple[str, ToolExecutionResult]]:
    invocations = _invocations(calls)
    if len(invocations) != len(results):
        raise ValueError(
            f"{len(invocations)} calls but {len(results)} results: pass the results "
            "chat.run(calls) returned, one per call, in call order"
        )
    return [(call.call_id, result) for call, result in zip(invocations, results, strict=True)]
