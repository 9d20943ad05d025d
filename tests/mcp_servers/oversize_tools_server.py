"""An MCP server whose tool list holds definitions no plugin could declare.

Run as ``python oversize_tools_server.py``. It speaks JSON-RPC over stdio by
hand (no SDK), so it can list what it likes. It always lists ``lookup`` ("Look
up a word in the glossary", answering ``found WORD``) and ``echo``; with
``OVERSIZE=1`` in its environment it also lists

- ``long_description``: a description of 8,800,000 characters (about a glossary too);
- ``wide_schema``: an input schema of 10,000 properties (about 340 KB of JSON);
- ``long_title``: a title of 20,000 characters;
- ``heavy_meta``: a ``_meta`` of 300,000 characters, all else small.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

SCHEMA = {"type": "object", "properties": {"word": {"type": "string"}}}
TOOLS: list[dict[str, Any]] = [
    {"name": "lookup", "description": "Look up a word in the glossary", "inputSchema": SCHEMA},
    {"name": "echo", "description": "Say it back", "inputSchema": SCHEMA},
]
OVERSIZE = [
    {
        "name": "long_description",
        "description": "glossary " + "x" * 8_800_000,
        "inputSchema": SCHEMA,
    },
    {
        "name": "wide_schema",
        "description": "many fields",
        "inputSchema": {
            "type": "object",
            "properties": {f"field_{n}": {"type": "string"} for n in range(10_000)},
        },
    },
    {"name": "long_title", "title": "t" * 20_000, "inputSchema": SCHEMA},
    {"name": "heavy_meta", "inputSchema": SCHEMA, "_meta": {"blob": "m" * 300_000}},
]


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "oversize", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": TOOLS + (OVERSIZE if os.environ.get("OVERSIZE") == "1" else [])}
    if method == "tools/call":
        word = (params.get("arguments") or {}).get("word", "")
        return {"content": [{"type": "text", "text": f"found {word}"}]}
    return {}


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        if "id" in request and "method" in request:
            answer = {"jsonrpc": "2.0", "id": request["id"], "result": _answer(request)}
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
