"""delivery.tracking: which request a transport's mark belongs to."""

from __future__ import annotations

import asyncio

from plughost.mcp import delivery


def test_a_mark_lands_on_the_innermost_tracking_and_the_outer_one_is_back_after_it() -> None:
    with delivery.tracking(tracked=True) as outer:
        with delivery.tracking(tracked=True) as inner:
            delivery.mark_sent()
        assert inner.sent and not outer.sent
        delivery.mark_sent()
    assert outer.sent
    delivery.mark_sent()  # outside any tracking: nothing to mark, and no error


def test_an_untracked_request_may_have_run_until_a_transport_says_otherwise() -> None:
    with delivery.tracking(tracked=False) as untracked, delivery.tracking(tracked=True) as tracked:
        pass
    assert untracked.may_have_run and not tracked.may_have_run


async def test_a_task_started_inside_a_tracking_marks_that_request() -> None:
    with delivery.tracking(tracked=True) as sent:
        await asyncio.create_task(_mark())
    assert sent.sent


async def _mark() -> None:
    delivery.mark_sent()
