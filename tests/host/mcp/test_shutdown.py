"""A stopping MCP HTTP server waits until its clients fell quiet, not only until calls returned."""

from __future__ import annotations

import asyncio
import time

from starlette.types import Receive, Scope, Send

from plughost.mcp.shutdown import HttpActivity


class _SlowApp:
    """An ASGI app whose every request takes 0.3 s; ``started`` is set once one runs."""

    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.started.set()
        await asyncio.sleep(0.3)

    def run(self, activity: HttpActivity, method: str) -> asyncio.Task[None]:
        app = activity.wrap(self)
        return asyncio.create_task(app({"type": "http", "method": method}, _nothing, _nothing))


async def test_the_server_settles_only_after_a_quiet_spell_following_the_last_request() -> None:
    activity = HttpActivity()
    slow = _SlowApp()
    request = slow.run(activity, "POST")
    await slow.started.wait()  # the request has started

    started = time.monotonic()
    await activity.settled(quiet=0.2, patience=5.0)
    waited = time.monotonic() - started

    assert request.done()
    assert waited >= 0.3 + 0.2 - 0.05  # the request, then the quiet spell


async def test_a_long_lived_get_stream_does_not_hold_the_server_up() -> None:
    activity = HttpActivity()
    slow = _SlowApp()
    stream = slow.run(activity, "GET")
    await slow.started.wait()

    await activity.settled(quiet=0.0, patience=5.0)

    assert not stream.done()
    await stream


async def test_settling_gives_up_after_its_patience() -> None:
    activity = HttpActivity()
    slow = _SlowApp()
    request = slow.run(activity, "POST")
    await slow.started.wait()

    await activity.settled(quiet=0.2, patience=0.05)

    assert not request.done()
    await request


async def _nothing(*_: object) -> dict[str, str]:
    return {}
