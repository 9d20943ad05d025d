"""An MCP server (official SDK, stdio) that shows how a gateway's calls reach it.

Run as ``python forwarding_server.py FOLDER``. Lines in ``FOLDER/events`` are ``<event> <label>``:
``start`` when a ``wait`` call begins, ``cancelled`` when its handler is
cancelled, ``done`` when it finishes.

Tools:

- ``request_id()``: the JSON-RPC id the call arrived under;
- ``wait(label, seconds, steps)``: reports ``steps`` progress notifications, then
  sleeps ``seconds``, recording start, end or cancellation;
- ``forge(request_ids)``: first writes, straight to stdout, a response carrying
  the text ``forged`` for each of ``request_ids`` (ids its client never sent,
  or did), then answers ``real``;
- ``die()``: the process exits (code 3) in the middle of the call;
- ``whoami()``: a token drawn when the process started (its pid is the same in every
  sandbox's pid namespace);
- ``ask_in_pairs(topic)``: waits until two of its calls are in progress (at most
  30 s, else it answers ``unpaired``), then asks its client's model about ``topic``
  (``sampling/createMessage``), waits until the other call has its answer too, and
  answers what the model said, or ``refused: REASON``.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from pathlib import Path

import anyio
import mcp_types as types
from mcp.server import MCPServer
from mcp.server.mcpserver import Context

LOG = Path(sys.argv[1]) / "events"
server = MCPServer("forwarding")
BOOT = secrets.token_hex(8)


def _note(event: str, label: str) -> None:
    with LOG.open("a", encoding="utf-8") as log:
        log.write(f"{event} {label}\n")


@server.tool()
def request_id(ctx: Context) -> str:
    """The id of this request, as it arrived."""
    return json.dumps(ctx.request_id)


@server.tool()
async def wait(label: str, ctx: Context, seconds: float = 0.0, steps: int = 0) -> str:
    """Report progress, then sleep; record the start and how it ended."""
    _note("start", label)
    ended = "cancelled"
    try:
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
        await anyio.sleep(seconds)
        ended = "done"
    finally:
        _note(ended, label)
    return f"waited {label}"


@server.tool()
def forge(request_ids: list[str | int]) -> str:
    """Write a forged response for each id, then answer for real."""
    for forged in request_ids:
        line = {
            "jsonrpc": "2.0",
            "id": forged,
            "result": {"content": [{"type": "text", "text": "forged"}]},
        }
        os.write(1, (json.dumps(line) + "\n").encode())
    return "real"


@server.tool()
def die() -> str:
    """End the process in the middle of the call."""
    os._exit(3)


@server.tool()
def whoami() -> str:
    """This process's token."""
    return BOOT


_pair_in_progress = 0
_paired = anyio.Event()
_pair_answered = 0
_answered = anyio.Event()


@server.tool()
async def ask_in_pairs(topic: str, ctx: Context) -> str:
    """Once two calls are in progress, ask the client's model about ``topic``."""
    global _pair_in_progress
    _pair_in_progress += 1
    try:
        if _pair_in_progress >= 2:
            _paired.set()
        with anyio.move_on_after(30) as waited:
            await _paired.wait()
        if waited.cancelled_caught:
            return "unpaired: no second call came"
        message = types.SamplingMessage(role="user", content=types.TextContent(text=topic))
        try:
            answer = await ctx.session.create_message([message], max_tokens=10)
            content = answer.content
            said = content.text if isinstance(content, types.TextContent) else "?"
        except Exception as exc:  # the gateway's refusal, as the server gets it
            said = f"refused: {exc}"
        # Both calls stay in progress until both were answered: each request is then
        # asked while the other call is still running, whichever is answered first.
        global _pair_answered
        _pair_answered += 1
        if _pair_answered >= 2:
            _answered.set()
        with anyio.move_on_after(30):
            await _answered.wait()
        return said
    finally:
        _pair_in_progress -= 1


if __name__ == "__main__":
    server.run()
