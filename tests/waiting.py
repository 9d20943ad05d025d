"""Waiting on conditions under a deadline: the only way tests here wait for another process."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


async def wait_until(
    predicate: Callable[[], bool | Awaitable[bool]],
    *,
    timeout: float,
    interval: float = 0.01,
    what: str = "condition",
) -> None:
    """Poll ``predicate`` until it is true; fail the test if ``timeout`` passes first.

    For state that lives in another process (a pid, a file, a counter updated by
    a socket reader), where there is no event to await.
    """
    try:
        async with asyncio.timeout(timeout):
            while True:
                outcome = predicate()
                if not isinstance(outcome, bool):
                    outcome = await outcome
                if outcome:
                    return
                await asyncio.sleep(interval)
    except TimeoutError:
        raise AssertionError(f"{what} did not become true within {timeout} s") from None
