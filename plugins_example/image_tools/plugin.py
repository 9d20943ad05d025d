"""Render colour swatches as PNG images, written by hand with zlib and struct.

Shows how a tool returns media: the image goes in ``content_items`` as base64
``data`` with a MIME type, and ``content`` says in words what was made.
"""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

from plughost_sdk import Plugin, Tool, ToolError
from plughost_sdk.types import ToolParameterInfo, ToolParamType

MAX_SIDE = 512
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

NAMED_COLORS: dict[str, tuple[int, int, int]] = {
    "black": (0, 0, 0),
    "white": (255, 255, 255),
    "red": (220, 38, 38),
    "orange": (234, 88, 12),
    "yellow": (234, 179, 8),
    "green": (22, 163, 74),
    "blue": (37, 99, 235),
    "purple": (147, 51, 234),
    "gray": (107, 114, 128),
}

RGB = tuple[int, int, int]


def parse_color(text: str) -> RGB:
    """Parse ``#rrggbb``, ``rrggbb``, ``#rgb`` or a colour name.

    Raises:
        ToolError: naming the accepted forms.
    """
    value = text.strip().lower()
    if value in NAMED_COLORS:
        return NAMED_COLORS[value]
    digits = value.removeprefix("#")
    if len(digits) == 3:
        digits = "".join(d * 2 for d in digits)
    try:
        if len(digits) != 6:
            raise ValueError(digits)
        packed = int(digits, 16)
    except ValueError:
        names = ", ".join(NAMED_COLORS)
        raise ToolError(
            f"{text!r} is not a colour; use a hex code like '#1e90ff' or one of: {names}"
        ) from None
    return (packed >> 16) & 0xFF, (packed >> 8) & 0xFF, packed & 0xFF


def encode_png(width: int, height: int, rows: list[bytes]) -> bytes:
    """Encode 8-bit RGB rows (``width * 3`` bytes each) as a PNG file."""
    # Each scanline starts with its filter type; 0 means "no filter".
    raw = b"".join(b"\x00" + row for row in rows)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit truecolour
    return (
        PNG_SIGNATURE
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(raw, 9))
        + _chunk(b"IEND", b"")
    )


def _chunk(kind: bytes, payload: bytes) -> bytes:
    crc = zlib.crc32(kind + payload) & 0xFFFFFFFF
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)


def gradient_rows(width: int, height: int, start: RGB, end: RGB) -> list[bytes]:
    """A left-to-right gradient from ``start`` to ``end`` (solid when they are equal)."""
    span = max(width - 1, 1)
    row = bytearray()
    for x in range(width):
        row.extend(round(a + (b - a) * x / span) for a, b in zip(start, end, strict=True))
    return [bytes(row)] * height


class ImagePlugin(Plugin):
    """Makes small images locally; no network, no imaging library."""

    @Tool(
        "render_swatch",
        brief_description="Render a solid or gradient colour swatch as a PNG image",
        detailed_description=(
            "Draws a rectangle filled with one colour, or a left-to-right gradient when "
            "end_color is given. Colours are hex codes ('#1e90ff') or basic names."
        ),
        parameters=[
            ToolParameterInfo(
                name="color",
                param_type=ToolParamType.STRING,
                description="Fill colour, or the gradient's left colour",
            ),
            ToolParameterInfo(
                name="width",
                param_type=ToolParamType.INTEGER,
                description=f"Width in pixels, 1 to {MAX_SIDE}",
                required=False,
                default=128,
            ),
            ToolParameterInfo(
                name="height",
                param_type=ToolParamType.INTEGER,
                description=f"Height in pixels, 1 to {MAX_SIDE}",
                required=False,
                default=64,
            ),
            ToolParameterInfo(
                name="end_color",
                param_type=ToolParamType.STRING,
                description="The gradient's right colour; omit for a solid fill",
                required=False,
            ),
        ],
        read_only=True,
    )
    async def render_swatch(
        self,
        color: str,
        width: int = 128,
        height: int = 64,
        end_color: str | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Render the swatch and return it as an image content item."""
        for label, side in (("width", width), ("height", height)):
            if not 1 <= side <= MAX_SIDE:
                raise ToolError(
                    f"{label} must be between 1 and {MAX_SIDE} pixels, got {side}; "
                    "try 128 x 64 for a typical swatch"
                )
        start = parse_color(color)
        end = parse_color(end_color) if end_color else start
        png = encode_png(width, height, gradient_rows(width, height, start, end))
        kind = "gradient" if end != start else "solid"
        what = f"{kind} swatch {width}x{height}"
        return {
            "success": True,
            "content": f"Rendered a {what}. The image is attached.",
            "content_items": [
                {
                    "type": "image",
                    "data": base64.b64encode(png).decode("ascii"),
                    "mime_type": "image/png",
                    "name": "swatch.png",
                    "description": f"A {what} from {color}"
                    + (f" to {end_color}" if end != start else ""),
                }
            ],
        }


def create_plugin() -> ImagePlugin:
    return ImagePlugin()
