"""A plugin whose result interleaves text, an image, audio and a link in one order."""

from __future__ import annotations

import base64
from typing import Any

from plughost_sdk import Plugin, Tool

PNG_1x1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="
)
WAV_HEADER = b"RIFF\x24\x00\x00\x00WAVEfmt "


class OrderedContentPlugin(Plugin):
    @Tool("illustrate", brief_description="Answer with text and media in a set order")
    async def illustrate(self, **kwargs: Any) -> dict[str, Any]:
        return {
            "content_items": [
                {"type": "text", "text": "Here is the logo:"},
                {"type": "image", "bytes": PNG_1x1, "mime_type": "image/png"},
                {"type": "text", "text": "The image above is the logo."},
                {"type": "audio", "bytes": WAV_HEADER, "mime_type": "audio/wav"},
                {"type": "resource_link", "uri": "https://example.com/logo", "name": "logo"},
                {"type": "text", "text": "That is all."},
            ]
        }


def create_plugin() -> OrderedContentPlugin:
    return OrderedContentPlugin()
