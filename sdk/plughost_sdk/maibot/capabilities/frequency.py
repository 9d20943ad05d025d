"""``ctx.frequency``: how talkative the bot is in a chat."""

from __future__ import annotations

from typing import Any

from plughost_sdk.maibot.capabilities._base import Proxy


class FrequencyCapability(Proxy):
    """Read and adjust the talk frequency of a chat."""

    async def get_current_talk_value(self, chat_id: str) -> Any:
        """The current talk value of ``chat_id``."""
        return await self._call("frequency.get_current_talk_value", chat_id=chat_id)

    async def set_adjust(self, chat_id: str, value: float) -> Any:
        """Set the adjustment for ``chat_id``; True when the host accepted."""
        return await self._call("frequency.set_adjust", chat_id=chat_id, value=value)

    async def get_adjust(self, chat_id: str) -> Any:
        """The adjustment for ``chat_id``."""
        return await self._call("frequency.get_adjust", chat_id=chat_id)
