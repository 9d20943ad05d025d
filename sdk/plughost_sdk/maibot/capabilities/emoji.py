"""``ctx.emoji``: the bot's sticker collection."""

from __future__ import annotations

from typing import Any

from plughost_sdk.maibot.capabilities._base import Proxy


class EmojiCapability(Proxy):
    """Find, register and delete stickers."""

    async def get_random(self, count: int = 5) -> Any:
        """Random stickers."""
        return await self._call("emoji.get_random", count=count)

    async def get_by_description(self, description: str, limit: int = 5) -> Any:
        """Stickers matching a description."""
        return await self._call("emoji.get_by_description", description=description, limit=limit)

    async def get_count(self) -> Any:
        """How many stickers there are."""
        return await self._call("emoji.get_count")

    async def get_info(self) -> Any:
        """Information about the collection."""
        return await self._call("emoji.get_info")

    async def get_emotions(self) -> Any:
        """The emotions stickers are tagged with."""
        return await self._call("emoji.get_emotions")

    async def get_all(self) -> Any:
        """Every sticker."""
        return await self._call("emoji.get_all")

    async def register_emoji(self, emoji_base64: str) -> Any:
        """Add a sticker (base64 image)."""
        return await self._call("emoji.register", emoji_base64=emoji_base64)

    async def delete_emoji(self, emoji_hash: str, keep_desc: bool | None = None) -> Any:
        """Delete a sticker by hash."""
        payload: dict[str, Any] = {"emoji_hash": emoji_hash}
        if keep_desc is not None:
            payload["keep_desc"] = keep_desc
        return await self._call("emoji.delete", **payload)
