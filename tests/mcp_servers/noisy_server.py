"""An MCP server that sends, during its calls, what no well-behaved server would.

Run as ``python noisy_server.py``. It speaks JSON-RPC over stdio by hand (no
SDK), so it can write what the SDK would refuse to: numbers that are not finite,
records of any size. A handshake-era server with these tools:

- ``odd_progress()``: under the call's progress token, reports NaN, infinity,
  a total of NaN, a message of 100,000 characters, then one plain report
  ``(1, 2, "half")``; then answers ``done``;
- ``loud_log()``: logs one ``notifications/message`` of 100,000 characters under a
  logger whose name has a line break, then answers ``done``;
- ``many_logs(count)``: logs ``count`` records of 1,000 characters, then
  answers ``done``;
- ``ask_many(count)``: sends ``count`` ``sampling/createMessage`` requests at once,
  waits for every answer (reporting progress, under the call's token if it has
  one, with how many came so far), then answers ``answered A, refused R``;
- ``flap()``: from then on, the list changes at every listing (a tool
  ``flap_0`` or ``flap_1`` comes and goes) and the server says so right after
  each answer to ``tools/list`` (and after this call's own);
- ``backtrack(length)``: declares an output schema whose ``x`` must match
  ``^(a+)+$`` and answers ``x`` = ``length`` letters ``a`` and a ``!`` (a
  backtracking engine takes time exponential in ``length`` to refuse it);
- tools whose names collide once made model-facing: ``same_mcp_noisy_same``,
  ``same`` and ``same!`` (the last two sanitize alike, and the second of them
  would be qualified to the first's name), and ``twice`` listed twice. Each is
  described as ``runs <its name>`` (``twice``: ``runs twice, listed first`` and
  ``... second``) and answers ``ran <its name>``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

WIDE = 100_000
LISTED = [0]  # listings since flap() was called
FLAPPING = [False]


def _send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")  # json writes NaN and Infinity as such
    sys.stdout.flush()


def _notify(method: str, params: dict[str, Any]) -> None:
    _send({"jsonrpc": "2.0", "method": method, "params": params})


def _tool(name: str, properties: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object", "properties": properties or {}}}


TOOLS = [
    _tool("odd_progress"),
    _tool("loud_log"),
    _tool("many_logs", {"count": {"type": "integer"}}),
    _tool("ask_many", {"count": {"type": "integer"}}),
    _tool("flap"),
    {
        **_tool("backtrack", {"length": {"type": "integer"}}),
        "outputSchema": {
            "type": "object",
            "properties": {"x": {"type": "string", "pattern": "^(a+)+$"}},
        },
    },
    *({**_tool(name), "description": f"runs {name}"} for name in ("same_mcp_noisy_same", "same")),
    {**_tool("same!"), "description": "runs same!"},
    {**_tool("twice"), "description": "runs twice, listed first"},
    {**_tool("twice"), "description": "runs twice, listed second"},
]


def _call(params: dict[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    token = (params.get("_meta") or {}).get("progressToken")
    if name == "odd_progress" and token is not None:
        odd = [
            {"progress": float("nan")},
            {"progress": float("inf"), "total": 2},
            {"progress": 1, "total": float("nan")},
            {"progress": 1, "total": 2, "message": "x" * WIDE},
            {"progress": 1, "total": 2, "message": "half"},
        ]
        for report in odd:
            _notify("notifications/progress", {"progressToken": token, **report})
    elif name == "loud_log":
        record = {"level": "warning", "logger": "a\nb", "data": "y" * WIDE}
        _notify("notifications/message", record)
    elif name == "backtrack":
        x = "a" * int((params.get("arguments") or {}).get("length", 0)) + "!"
        return {"content": [{"type": "text", "text": x}], "structuredContent": {"x": x}}
    elif name == "flap":
        FLAPPING[0] = True
    elif name == "ask_many":
        return _ask_many(int((params.get("arguments") or {}).get("count", 0)), token)
    elif name == "many_logs":
        for n in range(int((params.get("arguments") or {}).get("count", 0))):
            _notify("notifications/message", {"level": "info", "data": f"{n:08d}" + "z" * 992})
    else:
        return {"content": [{"type": "text", "text": f"ran {name}"}]}
    return {"content": [{"type": "text", "text": "done"}]}


def _ask_many(count: int, token: object) -> dict[str, Any]:
    question = {"messages": [{"role": "user", "content": {"type": "text", "text": "?"}}]}
    for n in range(count):
        params = {**question, "maxTokens": 5}
        _send(
            {
                "jsonrpc": "2.0",
                "id": f"ask-{n}",
                "method": "sampling/createMessage",
                "params": params,
            }
        )
    outcomes: dict[str, bool] = {}
    while len(outcomes) < count:
        message = json.loads(sys.stdin.readline() or "null")
        if message is None:
            raise SystemExit(0)
        if str(message.get("id", "")).startswith("ask-") and "method" not in message:
            outcomes[message["id"]] = "result" in message
            if token is not None:
                _notify(
                    "notifications/progress", {"progressToken": token, "progress": len(outcomes)}
                )
    answered = sum(outcomes.values())
    text = f"answered {answered}, refused {count - answered}"
    return {"content": [{"type": "text", "text": text}]}


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": True}, "logging": {}},
            "serverInfo": {"name": "noisy", "version": "1"},
        }
    if method == "tools/list":
        if not FLAPPING[0]:
            return {"tools": TOOLS}
        LISTED[0] += 1
        return {"tools": [*TOOLS, _tool(f"flap_{LISTED[0] % 2}")]}
    if method == "tools/call":
        return _call(params)
    return {}


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        if "id" in request and "method" in request:
            _send({"jsonrpc": "2.0", "id": request["id"], "result": _answer(request)})
            if FLAPPING[0] and request["method"] in ("tools/list", "tools/call"):
                _notify("notifications/tools/list_changed", {})


if __name__ == "__main__":
    main()
