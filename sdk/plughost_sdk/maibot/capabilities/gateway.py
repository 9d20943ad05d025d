"""``ctx.gateway``: report messages and state of a message gateway to the host.

These are MaiBot's raw host methods, not capabilities; in plughost they are the
capabilities ``host.route_message`` and ``host.update_message_gateway_state``,
so the manifest must list them and the embedder must handle them.
"""

from __future__ import annotations

from typing import Any

from plughost_sdk.maibot.capabilities._base import Proxy


class GatewayCapability(Proxy):
    """Route inbound messages and report a gateway's readiness."""

    async def route_message(
        self,
        gateway_name: str,
        message: dict[str, Any],
        *,
        route_metadata: dict[str, Any] | None = None,
        external_message_id: str = "",
        dedupe_key: str = "",
    ) -> bool:
        """Hand a received message to the host; True when it was accepted."""
        payload = {
            "gateway_name": gateway_name,
            "message": message,
            "route_metadata": route_metadata or {},
            "external_message_id": external_message_id,
            "dedupe_key": dedupe_key,
        }
        result = await self._ctx.call_host_method("host.route_message", payload=payload)
        return isinstance(result, dict) and bool(result.get("accepted", False))

    async def update_state(
        self,
        gateway_name: str,
        *,
        ready: bool,
        platform: str = "",
        account_id: str = "",
        scope: str = "",
        metadata: dict[str, Any] | None = None,
    ) -> bool:
        """Tell the host whether the gateway is ready; True when accepted."""
        payload = {
            "gateway_name": gateway_name,
            "ready": ready,
            "platform": platform,
            "account_id": account_id,
            "scope": scope,
            "metadata": metadata or {},
        }
        result = await self._ctx.call_host_method(
            "host.update_message_gateway_state", payload=payload
        )
        return isinstance(result, dict) and bool(result.get("accepted", False))

    async def receive_external_message(
        self,
        message: dict[str, Any],
        *,
        gateway_name: str,
        route_metadata: dict[str, Any] | None = None,
        external_message_id: str = "",
        dedupe_key: str = "",
    ) -> bool:
        """Old name of :meth:`route_message`."""
        return await self.route_message(
            gateway_name=gateway_name,
            message=message,
            route_metadata=route_metadata,
            external_message_id=external_message_id,
            dedupe_key=dedupe_key,
        )

    async def update_runtime_state(
        self,
        *,
        gateway_name: str,
        connected: bool,
        platform: str = "",
        account_id: str = "",
        scope: str = "",
        metadata: dict[str, Any] | None = None,
    ) -> bool:
        """Old name of :meth:`update_state`."""
        return await self.update_state(
            gateway_name=gateway_name,
            ready=connected,
            platform=platform,
            account_id=account_id,
            scope=scope,
            metadata=metadata,
        )
