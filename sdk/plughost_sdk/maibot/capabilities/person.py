"""``ctx.person``: people the bot knows."""

from __future__ import annotations

from typing import Any

from plughost_sdk.maibot.capabilities._base import Proxy


class PersonCapability(Proxy):
    """Look people up."""

    async def get_id(self, platform: str, user_id: str) -> Any:
        """The person id of a platform user."""
        return await self._call("person.get_id", platform=platform, user_id=user_id)

    async def get_value(self, person_id: str, field_name: str) -> Any:
        """One field of a person."""
        return await self._call("person.get_value", person_id=person_id, field_name=field_name)

    async def get_id_by_name(self, person_name: str) -> Any:
        """The person id for a name."""
        return await self._call("person.get_id_by_name", person_name=person_name)
