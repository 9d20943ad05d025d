"""``ctx.message``: the bot's message history."""

from __future__ import annotations

from typing import Any

from plughost_sdk.maibot.capabilities._base import Proxy


class MessageCapability(Proxy):
    """Read stored messages."""

    async def get_recent(self, chat_id: str, limit: int = 10) -> Any:
        """The latest messages of a chat."""
        return await self._call("message.get_recent", chat_id=chat_id, limit=limit)

    async def get_by_id(
        self,
        message_id: str,
        *,
        chat_id: str = "",
        stream_id: str = "",
        include_binary_data: bool = False,
    ) -> Any:
        """One message by id."""
        return await self._call(
            "message.get_by_id",
            message_id=message_id,
            chat_id=chat_id,
            stream_id=stream_id,
            include_binary_data=include_binary_data,
        )

    async def build_readable(self, messages: Any, **kwargs: Any) -> Any:
        """Messages rendered as readable text."""
        return await self._call("message.build_readable", messages=messages, **kwargs)

    async def get_by_time(self, start_time: str, end_time: str, **kwargs: Any) -> Any:
        """Messages in a time range."""
        return await self._call(
            "message.get_by_time", start_time=start_time, end_time=end_time, **kwargs
        )

    async def get_by_time_in_chat(
        self, chat_id: str, start_time: str, end_time: str, **kwargs: Any
    ) -> Any:
        """A chat's messages in a time range."""
        return await self._call(
            "message.get_by_time_in_chat",
            chat_id=chat_id,
            start_time=start_time,
            end_time=end_time,
            **kwargs,
        )

    async def count_new(self, chat_id: str, since: str) -> Any:
        """How many messages arrived in a chat since ``since``."""
        return await self._call("message.count_new", chat_id=chat_id, since=since)
