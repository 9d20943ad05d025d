"""``ctx.webui``: files uploaded through the host's web UI."""

from __future__ import annotations

from typing import Any, cast

from plughost_sdk.maibot.capabilities._base import Proxy


class WebUICapability(Proxy):
    """Claim an upload."""

    async def claim_upload(self, upload_id: str) -> dict[str, Any]:
        """Claim the upload ``upload_id`` into this plugin's data directory."""
        return cast(dict[str, Any], await self._call("webui.claim_upload", upload_id=upload_id))
