"""PipeLines: lines offered to a hook as the loop reads them, the rest handed on in order.

The protocol is driven here as a pipe transport drives it (``data_received``,
``eof_received``, ``connection_lost``), with a transport that records whether it
is paused. The stdio paths that use it (an upstream's stdout, serve's own stdin)
are tested with real processes in ``test_stdio_upstream_lines.py``,
``test_stdio_server.py`` and the direct-lane tests.
"""

from __future__ import annotations

import asyncio

import pytest

from plughost.mcp.pipe_lines import _PAUSE_AT, _RESUME_AT, LineTooLongError, PipeLines
from tests.waiting import wait_until


class _Transport(asyncio.ReadTransport):
    def __init__(self) -> None:
        super().__init__()
        self.paused = False

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False


class _Inner(asyncio.Protocol):
    def __init__(self) -> None:
        self.lost: list[Exception | None] = []

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost.append(exc)


def _lines(
    taken: list[bytes], takes: bytes = b"lane", *, final_line: bool = False, limit: int = 1000
) -> PipeLines:
    def hook(line: bytes) -> bool:
        if line.startswith(takes):
            taken.append(line)
            return True
        return False

    lines = PipeLines(lambda: hook, limit=limit, final_line=final_line)
    lines.connection_made(_Transport())
    return lines


async def test_a_line_the_hook_takes_is_handled_as_it_is_read_and_the_rest_wait_in_order() -> None:
    taken: list[bytes] = []
    lines = _lines(taken)
    lines.data_received(b"lane 1\nsession 1\nlane 2\n  \nsess")
    assert taken == [b"lane 1"]  # lane 2 waits behind session 1, which is not handed on yet
    assert await lines.next() == b"session 1"
    lines.data_received(b"ion 2\nlane 3\n")
    assert taken == [b"lane 1"]  # session 1 is being handed on: everything waits behind it
    assert await lines.next() == b"session 2"  # lane 2 went to the hook on the way
    assert taken == [b"lane 1", b"lane 2"]
    pending = asyncio.ensure_future(lines.next())
    await wait_until(lambda: len(taken) == 3, timeout=5, what="lane 3 taken on the way")
    assert taken == [b"lane 1", b"lane 2", b"lane 3"] and not pending.done()
    lines.data_received(b"lane 4\n")  # nothing waits and nothing is handed on: taken at once
    assert taken[-1] == b"lane 4" and not pending.done()
    lines.eof_received()
    assert await pending is None


async def test_each_line_is_offered_to_the_hook_once() -> None:
    offered: list[bytes] = []

    def hook(line: bytes) -> bool:
        offered.append(line)
        return False

    lines = PipeLines(lambda: hook, limit=100, final_line=False)
    lines.data_received(b"one\ntwo\n")  # one refused as read, two queued behind it
    assert [await lines.next(), await lines.next()] == [b"one", b"two"]
    assert offered == [b"one", b"two"]


async def test_a_hook_set_after_reading_began_sees_the_next_lines() -> None:
    taken: list[bytes] = []
    hook = None
    lines = PipeLines(lambda: hook, limit=100, final_line=False)
    lines.data_received(b"lane 1\n")
    assert await lines.next() == b"lane 1"

    def take(line: bytes) -> bool:
        taken.append(line)
        return True

    hook = take
    lines.data_received(b"lane 2\n")
    assert taken == []  # lane 1 is still being handed on
    lines.eof_received()
    assert await lines.next() is None and taken == [b"lane 2"]


async def test_reading_pauses_while_many_lines_wait_and_resumes_once_they_drain() -> None:
    lines = _lines([])
    transport = _Transport()
    lines.connection_made(transport)
    lines.data_received(b"".join(b"line %d\n" % n for n in range(_PAUSE_AT)))
    assert transport.paused
    for n in range(_PAUSE_AT - _RESUME_AT - 1):
        assert await lines.next() == b"line %d" % n
        assert transport.paused
    await lines.next()
    assert not transport.paused


async def test_the_last_unended_line_counts_only_where_asked() -> None:
    kept, dropped = _lines([], final_line=True), _lines([], final_line=False)
    for lines in (kept, dropped):
        lines.data_received(b"first\nlast, with no newline")
        lines.eof_received()
        assert await lines.next() == b"first"
    assert await kept.next() == b"last, with no newline"
    assert await kept.next() is None
    assert await dropped.next() is None


async def test_a_line_over_the_limit_ends_the_lines_after_those_before_it() -> None:
    lines = _lines([], limit=10)
    transport = _Transport()
    lines.connection_made(transport)
    lines.data_received(b"short\n" + b"x" * 11)
    assert transport.paused  # what the writer sends next would only be dropped
    assert await lines.next() == b"short"
    with pytest.raises(LineTooLongError, match="over 10 bytes"):
        await lines.next()


async def test_a_line_over_the_limit_is_refused_when_one_read_holds_all_of_it() -> None:
    lines = _lines([], limit=10)
    lines.data_received(b"short\n" + b"x" * 11 + b"\nnever read\n")
    assert await lines.next() == b"short"
    with pytest.raises(LineTooLongError, match="over 10 bytes"):
        await lines.next()


async def test_a_hook_that_raises_ends_the_lines_after_those_before_it() -> None:
    def hook(line: bytes) -> bool:
        if line == b"bad":
            raise RuntimeError("the hook failed")
        return False

    lines = PipeLines(lambda: hook, limit=100, final_line=False)
    lines.data_received(b"good\n")
    assert await lines.next() == b"good"
    lines.data_received(b"bad\n")  # queued behind good, offered when its turn comes
    with pytest.raises(RuntimeError, match="the hook failed"):
        await lines.next()
    fresh = PipeLines(lambda: hook, limit=100, final_line=False)
    fresh.data_received(b"bad\nnever read\n")  # offered as it is read
    with pytest.raises(RuntimeError, match="the hook failed"):
        await fresh.next()


async def test_a_failed_read_is_raised_and_the_transports_own_protocol_is_told() -> None:
    inner = _Inner()
    lines = PipeLines(lambda: None, limit=100, final_line=False, inner=inner)
    lines.data_received(b"one\n")
    error = OSError("read failed")
    lines.connection_lost(error)
    assert inner.lost == [error]
    assert await lines.next() == b"one"
    with pytest.raises(OSError, match="read failed"):
        await lines.next()
