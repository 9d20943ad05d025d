"""``ctx.chat``: chat streams and avatars."""

from __future__ import annotations

from typing import Any, Literal, TypedDict, cast

from plughost_sdk.maibot.capabilities._base import Proxy


class AvatarInfo(TypedDict):
    """An avatar lookup's answer."""

    status: Literal["available", "unsupported", "missing"]
    url: str | None
    expires_at: float


class ChatCapability(Proxy):
    """Chat streams (conversations) the bot is in."""

    async def get_avatar(
        self,
        platform: str,
        target_id: str,
        target_type: Literal["user", "group"] = "user",
        *,
        account_id: str = "",
        scope: str = "",
        force_refresh: bool = False,
    ) -> AvatarInfo:
        """The avatar of a user or group."""
        result = await self._call(
            "chat.get_avatar",
            platform=platform,
            target_id=target_id,
            target_type=target_type,
            account_id=account_id,
            scope=scope,
            force_refresh=force_refresh,
        )
        return cast(AvatarInfo, result)

    async def get_all_streams(self, platform: str = "qq") -> Any:
        """Every chat stream on ``platform``."""
        return await self._call("chat.get_all_streams", platform=platform)

    async def get_group_streams(self, platform: str = "qq") -> Any:
        """The group chat streams on ``platform``."""
        return await self._call("chat.get_group_streams", platform=platform)

    async def get_private_streams(self, platform: str = "qq") -> Any:
        """The private chat streams on ``platform``."""
        return await self._call("chat.get_private_streams", platform=platform)

    async def get_stream_by_group_id(self, group_id: str, platform: str = "qq") -> Any:
        """The stream of a group."""
        return await self._call("chat.get_stream_by_group_id", group_id=group_id, platform=platform)

    async def get_stream_by_user_id(self, user_id: str, platform: str = "qq") -> Any:
        """The private stream with a user."""
        return await self._call("chat.get_stream_by_user_id", user_id=user_id, platform=platform)

    async def open_session(
        self,
        platform: str = "qq",
        chat_type: str = "private",
        *,
        user_id: str = "",
        group_id: str = "",
        account_id: str = "",
        scope: str = "",
        **kwargs: Any,
    ) -> Any:
        """Open (or find) a chat session."""
        return await self._call(
            "chat.open_session",
            platform=platform,
            chat_type=chat_type,
            user_id=user_id,
            group_id=group_id,
            account_id=account_id,
            scope=scope,
            **kwargs,
        )
