"""One official SDK client of a real ``plughost serve``, kept open for the tests of a module.

A stdio client starts a ``plughost serve --mcp-stdio`` of its own, which loads its
plugins and upstream servers before it answers: the cost of a whole process per
test. Tests that only need *a* session of such a serve share one here, each with
callbacks of its own (:meth:`SharedClient.attach`), so what one test's session
hears never lands in another test's records. Tests that kill, reload or break the
serve, or need a session negotiated differently, open their own client instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from tests.mcp_servers.harness import plughost_client

Callback = Callable[..., Awaitable[Any]]


class SharedClient:
    """A client opened on first use by a test and closed by the module's fixture.

    The SDK client's anyio contexts must be left by the task that entered them, and
    a module fixture's setup and teardown run in different tasks: an owner task holds
    the client from the first :meth:`attach` until :meth:`aclose`.
    """

    def __init__(
        self,
        config: Path,
        served: tuple[str, str] | None = None,
        *,
        mode: str = "legacy",
        callbacks: Iterable[str] = (),
    ) -> None:
        self._config = config
        self._served = served
        self._mode = mode
        self._names = frozenset(callbacks)
        self._current: dict[str, Callback] = {}
        self._client: Any = None
        self._entered = asyncio.Event()
        self._leave = asyncio.Event()
        self._owner: asyncio.Task[None] | None = None

    def _forward(self, name: str) -> Callback:
        async def call(*args: Any) -> Any:
            return await self._current[name](*args)

        return call

    async def _own(self) -> None:
        callbacks = {name: self._forward(name) for name in self._names}
        async with plughost_client(
            self._config, self._served, mode=self._mode, **callbacks
        ) as client:
            self._client = client
            self._entered.set()
            await self._leave.wait()

    async def attach(self, *, timeout: float = 60, **callbacks: Callback) -> Any:
        """The shared client, now calling this test's ``callbacks`` (all it was made with)."""
        if set(callbacks) != self._names:
            raise TypeError(f"give exactly these callbacks: {sorted(self._names)}")
        self._current = dict(callbacks)
        if self._owner is None:
            self._owner = asyncio.create_task(self._own())
        entered = asyncio.create_task(self._entered.wait())
        try:
            await asyncio.wait(
                {entered, self._owner}, timeout=timeout, return_when="FIRST_COMPLETED"
            )
        finally:
            entered.cancel()
        if self._owner.done():  # the client failed to open, or closed under the tests
            self._owner.result()
            raise AssertionError("the shared MCP client closed")
        if not self._entered.is_set():
            raise AssertionError(f"the shared MCP client did not open within {timeout} s")
        return self._client

    async def aclose(self) -> None:
        """Close the client (and with it a stdio serve), if a test opened it."""
        self._leave.set()
        if self._owner is not None:
            await self._owner
