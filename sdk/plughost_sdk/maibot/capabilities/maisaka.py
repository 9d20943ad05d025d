"""``ctx.maisaka``: MaiBot's reasoning engine (context, replies, proactive turns)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plughost_sdk.maibot.capabilities._base import Proxy

if TYPE_CHECKING:
    from plughost_sdk.maibot.context import PluginContext


class MaisakaContextCapability(Proxy):
    """The engine's conversation context."""

    async def resolve_image(self, stream_id: str, source_id: str, index: int = 0) -> Any:
        """An image the context refers to."""
        return await self._call(
            "maisaka.context.resolve_image", stream_id=stream_id, source_id=source_id, index=index
        )

    async def append(
        self,
        stream_id: str,
        segments: list[dict[str, Any]],
        *,
        visible_text: str = "",
        source_kind: str = "",
        message_id: str = "",
        replyable: bool = False,
        user_info: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Append segments to a stream's context."""
        return await self._call(
            "maisaka.context.append",
            stream_id=stream_id,
            segments=segments,
            visible_text=visible_text,
            source_kind=source_kind,
            message_id=message_id,
            replyable=replyable,
            user_info=user_info,
            **kwargs,
        )


class MaisakaReplyCapability(Proxy):
    """Replies written by the engine."""

    async def generate(
        self,
        stream_id: str,
        reference: str,
        *,
        format_instruction: str = "",
        model_name: str = "",
        timeout_ms: int | None = None,
    ) -> Any:
        """Generate a reply in ``stream_id`` from ``reference``."""
        return await self._ctx.call_capability(
            "maisaka.reply.generate",
            stream_id=stream_id,
            reference=reference,
            format_instruction=format_instruction,
            model_name=model_name,
            timeout_ms=timeout_ms,
        )


class MaisakaProactiveCapability(Proxy):
    """Turns the engine starts on its own."""

    async def trigger(
        self,
        stream_id: str,
        intent: str,
        *,
        reason: str = "",
        priority: str = "",
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Ask the engine to speak in ``stream_id``."""
        return await self._call(
            "maisaka.proactive.trigger",
            stream_id=stream_id,
            intent=intent,
            reason=reason,
            priority=priority,
            metadata=metadata or {},
            **kwargs,
        )


class MaisakaCapability(Proxy):
    """``ctx.maisaka.reply``, ``.context`` and ``.proactive``, plus two shortcuts."""

    def __init__(self, ctx: PluginContext) -> None:
        super().__init__(ctx)
        self.reply = MaisakaReplyCapability(ctx)
        self.context = MaisakaContextCapability(ctx)
        self.proactive = MaisakaProactiveCapability(ctx)

    async def append_context(
        self, stream_id: str, segments: list[dict[str, Any]], **kwargs: Any
    ) -> Any:
        """Same as ``context.append``."""
        return await self.context.append(stream_id, segments, **kwargs)

    async def trigger_proactive(self, stream_id: str, intent: str, **kwargs: Any) -> Any:
        """Same as ``proactive.trigger``."""
        return await self.proactive.trigger(stream_id, intent, **kwargs)
