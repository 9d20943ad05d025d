"""``ctx.send``: send messages to a chat stream.

Each method returns True when the host sent the message (``success``), or with
``return_details=True`` a :class:`SendResult`. Images and stickers travel as
base64 text (``image_base64``, ``emoji_base64``).
"""

from __future__ import annotations

from typing import Any, TypedDict

from plughost_sdk.maibot.capabilities._base import Proxy


class SendResult(TypedDict):
    """What ``return_details=True`` returns."""

    sent: bool
    message_id: str | None


class SendCapability(Proxy):
    """Send text, images, stickers, forwards, mixed segments, commands, custom types."""

    async def text(
        self, text: str, stream_id: str, *, return_details: bool = False, **kwargs: Any
    ) -> bool | SendResult:
        """Send ``text``."""
        return await self._send(
            "send.text", text=text, stream_id=stream_id, return_details=return_details, **kwargs
        )

    async def emoji(
        self, emoji_data: str, stream_id: str, *, return_details: bool = False, **kwargs: Any
    ) -> bool | SendResult:
        """Send a sticker (base64)."""
        return await self._send(
            "send.emoji",
            emoji_base64=emoji_data,
            stream_id=stream_id,
            return_details=return_details,
            **kwargs,
        )

    async def image(
        self, image_data: str, stream_id: str, *, return_details: bool = False, **kwargs: Any
    ) -> bool | SendResult:
        """Send an image (base64)."""
        return await self._send(
            "send.image",
            image_base64=image_data,
            stream_id=stream_id,
            return_details=return_details,
            **kwargs,
        )

    async def forward(
        self,
        messages: list[dict[str, Any]],
        stream_id: str,
        *,
        return_details: bool = False,
        **kwargs: Any,
    ) -> bool | SendResult:
        """Send a forwarded bundle of messages."""
        return await self._send(
            "send.forward",
            messages=messages,
            stream_id=stream_id,
            return_details=return_details,
            **kwargs,
        )

    async def hybrid(
        self,
        segments: list[dict[str, Any]],
        stream_id: str,
        *,
        return_details: bool = False,
        **kwargs: Any,
    ) -> bool | SendResult:
        """Send one message made of several segments."""
        return await self._send(
            "send.hybrid",
            segments=segments,
            stream_id=stream_id,
            return_details=return_details,
            **kwargs,
        )

    async def command(
        self, command: str, stream_id: str, *, return_details: bool = False, **kwargs: Any
    ) -> bool | SendResult:
        """Send a platform command."""
        return await self._send(
            "send.command",
            command=command,
            stream_id=stream_id,
            return_details=return_details,
            **kwargs,
        )

    async def custom(
        self,
        custom_type: str,
        data: Any,
        stream_id: str,
        *,
        return_details: bool = False,
        **kwargs: Any,
    ) -> bool | SendResult:
        """Send a message of a host-defined type (sent under both MaiBot's old and new names)."""
        return await self._send(
            "send.custom",
            message_type=custom_type,
            content=data,
            custom_type=custom_type,
            data=data,
            stream_id=stream_id,
            return_details=return_details,
            **kwargs,
        )

    async def _send(self, capability: str, **kwargs: Any) -> bool | SendResult:
        result: bool | SendResult = await self._call(capability, **kwargs)
        return result
