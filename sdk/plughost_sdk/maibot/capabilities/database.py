"""``ctx.db``: the host's database (capabilities ``database.*``)."""

from __future__ import annotations

from typing import Any

from plughost_sdk.maibot.capabilities._base import Proxy


class DatabaseCapability(Proxy):
    """Query and change the host's database models."""

    async def query(
        self,
        model_name: str,
        query_type: str = "get",
        data: dict[str, Any] | None = None,
        filters: dict[str, Any] | None = None,
        order_by: list[str] | None = None,
        limit: int | None = None,
        single_result: bool = False,
    ) -> Any:
        """Run a query of ``query_type`` on ``model_name``."""
        return await self._call(
            "database.query",
            model_name=model_name,
            query_type=query_type,
            data=data,
            filters=filters or {},
            order_by=order_by or [],
            limit=limit,
            single_result=single_result,
        )

    async def save(
        self, model_name: str, data: dict[str, Any], key_field: str = "id", key_value: Any = None
    ) -> Any:
        """Insert or update a record."""
        return await self._call(
            "database.save",
            model_name=model_name,
            data=data,
            key_field=key_field,
            key_value=key_value,
        )

    async def get(
        self,
        model_name: str,
        filters: dict[str, Any] | None = None,
        limit: int | None = None,
        order_by: str | list[str] | None = None,
        single_result: bool = False,
    ) -> Any:
        """Read records."""
        return await self._call(
            "database.get",
            model_name=model_name,
            filters=filters or {},
            limit=limit,
            order_by=order_by,
            single_result=single_result,
        )

    async def delete(self, model_name: str, filters: dict[str, Any]) -> Any:
        """Delete the records matching ``filters``."""
        return await self._call("database.delete", model_name=model_name, filters=filters)

    async def count(self, model_name: str, filters: dict[str, Any] | None = None) -> int:
        """How many records match ``filters``."""
        result = await self._call("database.count", model_name=model_name, filters=filters or {})
        if isinstance(result, dict):
            result = result.get("count")
        return int(result) if result is not None else 0
