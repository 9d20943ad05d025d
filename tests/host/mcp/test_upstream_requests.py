"""UpstreamRequests: a server's log records, sampling and elicitation reach the latest caller."""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as types
import pytest

from plughost.mcp.upstream_requests import UpstreamRequests
from plughost.tools.client_link import current_client


class Recorder:
    """A client link that keeps the log records it is given."""

    def __init__(self) -> None:
        self.records: list[tuple[int, str, str]] = []

    def log(self, level: int, logger: str, message: str) -> None:
        self.records.append((level, logger, message))

    async def generate(self, request: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    async def elicit(self, asker: str, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError


def record(text: str) -> types.LoggingMessageNotificationParams:
    return types.LoggingMessageNotificationParams(level="warning", logger="t", data=text)


async def test_a_servers_log_goes_to_the_latest_call_in_progress_and_to_none_after_it() -> None:
    requests = UpstreamRequests()
    logs = requests.callbacks("srv")["logging_callback"]
    first, second = Recorder(), Recorder()

    async def second_call_fails() -> None:
        current_client.set(second)
        with requests.calling("srv"):
            await logs(record("two"))
            raise KeyError("the call failed")

    token = current_client.set(first)
    try:
        with requests.calling("srv"):
            await logs(record("one"))
            with pytest.raises(KeyError):
                await second_call_fails()
            await logs(record("three"))  # the second call has ended, failed or not
        await logs(record("four"))  # no call in progress: dropped
    finally:
        current_client.reset(token)

    assert [r[2] for r in first.records] == ["one", "three"]
    assert second.records == [(logging.WARNING, "mcp.srv.t", "two")]


async def test_a_call_made_by_no_client_that_can_be_asked_takes_no_callers_place() -> None:
    requests = UpstreamRequests()
    logs = requests.callbacks("srv")["logging_callback"]
    caller = Recorder()
    token = current_client.set(caller)
    try:
        with requests.calling("srv"):
            current_client.set(None)  # an embedder's own call, beside the client's
            with requests.calling("srv"):
                await logs(record("during both"))
    finally:
        current_client.reset(token)

    assert [r[2] for r in caller.records] == ["during both"]
