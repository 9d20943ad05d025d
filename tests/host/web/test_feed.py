"""ConsoleFeed: a capped history of events and log records, filters, live subscribers."""

from __future__ import annotations

import asyncio
import logging
import threading

from plughost.events import EventKind, LifecycleEvent
from plughost.web.feed import ConsoleFeed, FeedLogHandler


def _event(kind: EventKind, plugin: str = "p", message: str = "m") -> LifecycleEvent:
    return LifecycleEvent(kind, message, plugin_id=plugin)


async def test_feed_keeps_only_the_newest_entries_up_to_its_size() -> None:
    feed = ConsoleFeed(10, asyncio.get_running_loop())
    for n in range(25):
        feed.add_event(_event(EventKind.PLUGIN_LOADED, message=f"event {n}"))

    entries = feed.recent(limit=100)

    assert [e.message for e in entries] == [f"event {n}" for n in range(15, 25)]


async def test_recent_filters_by_plugin_and_minimum_level() -> None:
    feed = ConsoleFeed(100, asyncio.get_running_loop())
    feed.add_event(_event(EventKind.PLUGIN_LOADED, "a"))
    feed.add_event(_event(EventKind.RUNNER_CRASHED, "a"))
    feed.add_event(_event(EventKind.RUNNER_CRASHED, "b"))

    warnings_of_a = feed.recent(plugin_id="a", level="WARNING")

    assert [(e.plugin_id, e.kind) for e in warnings_of_a] == [("a", "runner.crashed")]
    assert len(feed.recent(plugin_id="a")) == 2


async def test_monitor_events_are_marked_as_monitor_entries() -> None:
    feed = ConsoleFeed(100, asyncio.get_running_loop())
    feed.add_event(LifecycleEvent(EventKind.CYCLE_START, "cycle c1", details={"cycle_id": "c1"}))

    (entry,) = feed.recent()

    assert entry.source == "monitor"
    assert entry.details == {"cycle_id": "c1"}


async def test_a_subscriber_receives_entries_added_after_it_subscribed() -> None:
    feed = ConsoleFeed(100, asyncio.get_running_loop())
    feed.add_event(_event(EventKind.PLUGIN_LOADED, message="before"))
    with feed.subscription() as queue:
        feed.add_event(_event(EventKind.PLUGIN_LOADED, message="after"))

        assert (await queue.get()).message == "after"
        assert queue.empty()


async def test_log_records_from_another_thread_reach_the_feed_with_their_plugin() -> None:
    feed = ConsoleFeed(100, asyncio.get_running_loop())
    logger = logging.getLogger("plughost.plugin.tests.feed")
    handler = FeedLogHandler(feed)
    logger.addHandler(handler)
    try:
        with feed.subscription() as queue:
            worker = threading.Thread(
                target=logger.warning,
                args=("disk %s", "full"),
                kwargs={"extra": {"plugin_id": "x"}},
            )
            worker.start()
            entry = await asyncio.wait_for(queue.get(), 5)
            worker.join()
    finally:
        logger.removeHandler(handler)

    assert (entry.source, entry.level, entry.plugin_id) == ("log", "WARNING", "x")
    assert entry.message == "disk full"


async def test_log_copies_of_lifecycle_events_are_not_added_twice() -> None:
    feed = ConsoleFeed(100, asyncio.get_running_loop())
    handler = FeedLogHandler(feed)
    record = logging.LogRecord("plughost.events", logging.INFO, "", 0, "plugin.loaded x", (), None)

    handler.emit(record)

    assert feed.recent() == []


async def test_a_subscriber_that_never_reads_holds_only_the_newest_entries() -> None:
    feed = ConsoleFeed(100, asyncio.get_running_loop())
    with feed.subscription() as queue:
        for n in range(3 * queue.maxsize):
            feed.add_event(_event(EventKind.PLUGIN_LOADED, message=f"entry {n}"))

        assert queue.qsize() == queue.maxsize
        assert queue.get_nowait().message == f"entry {2 * queue.maxsize}"
