"""``ctx.render``: render HTML to a PNG through the host's browser."""

from __future__ import annotations

from typing import Any

from plughost_sdk.maibot.capabilities._base import Proxy


class RenderCapability(Proxy):
    """HTML rendering."""

    async def html2png(
        self,
        html: str,
        *,
        selector: str = "body",
        viewport: dict[str, int] | None = None,
        device_scale_factor: float = 2.0,
        full_page: bool = False,
        omit_background: bool = False,
        wait_until: str = "load",
        wait_for_selector: str = "",
        wait_for_timeout_ms: int = 0,
        render_timeout_ms: int = 0,
        allow_network: bool = False,
    ) -> Any:
        """Render ``html``; the host answers with the image (base64) under ``result``."""
        args = {
            "html": html,
            "selector": selector,
            "viewport": viewport or {},
            "device_scale_factor": device_scale_factor,
            "full_page": full_page,
            "omit_background": omit_background,
            "wait_until": wait_until,
            "wait_for_selector": wait_for_selector,
            "wait_for_timeout_ms": wait_for_timeout_ms,
            "render_timeout_ms": render_timeout_ms,
            "allow_network": allow_network,
        }
        # Not call_capability: its own keyword timeout_ms must not be read from these args.
        result = await self._ctx.call_host_method(
            "cap.call", payload={"capability": "render.html2png", "args": args}
        )
        return self._ctx._normalize_capability_result("render.html2png", result)
