"""UpstreamRequests: a server's log records, sampling and elicitation reach the latest caller.

Only among one client's calls: while several clients' calls are in progress to a
server, none of them is told what the server asks or logs.
"""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as types
import pytest

from plughost.mcp.upstream_requests import UpstreamRequests
from plughost.tools.client_link import current_client


class Recorder:
    """A client link that keeps the log records it is given; ``client`` is who called."""

    def __init__(self, client: object = "the client") -> None:
        self.client = client
        self.records: list[tuple[int, str, str]] = []
        self.asked: list[dict[str, Any]] = []

    def log(self, level: int, logger: str, message: str) -> None:
        self.records.append((level, logger, message))

    async def generate(self, request: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(request)
        return {"text": "an answer", "model": "m"}

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


async def test_a_call_made_by_no_client_that_can_be_asked_is_a_caller_of_its_own() -> None:
    requests = UpstreamRequests()
    logs = requests.callbacks("srv")["logging_callback"]
    caller = Recorder()
    token = current_client.set(caller)
    try:
        with requests.calling("srv"):
            current_client.set(None)  # an embedder's own call, beside the client's
            with requests.calling("srv"):
                await logs(record("during both"))  # maybe the embedder's: shown to no one
            await logs(record("after"))
    finally:
        current_client.reset(token)

    assert [r[2] for r in caller.records] == ["after"]


def sampling_request(text: str) -> types.CreateMessageRequestParams:
    message = types.SamplingMessage(role="user", content=types.TextContent(text=text))
    return types.CreateMessageRequestParams(messages=[message], max_tokens=10)


async def test_while_two_clients_calls_are_in_progress_neither_is_shown_what_the_server_asks() -> (
    None
):
    requests = UpstreamRequests()
    callbacks = requests.callbacks("srv")
    sample, logs = callbacks["sampling_callback"], callbacks["logging_callback"]
    alice, bob = Recorder(client="alice"), Recorder(client="bob")
    alices_other = Recorder(client="alice")

    token = current_client.set(alice)
    try:
        with requests.calling("srv"):
            current_client.set(bob)
            with requests.calling("srv"):
                refused = await sample(None, sampling_request("about alice's call?"))
                await logs(record("whose?"))
            current_client.set(alices_other)
            with requests.calling("srv"):  # alice's two calls: her latest is asked
                answered = await sample(None, sampling_request("about alice's call"))
                await logs(record("alice's"))
    finally:
        current_client.reset(token)

    assert isinstance(refused, types.ErrorData)
    assert "calls from 2 clients are in progress to server 'srv'" in refused.message
    assert isinstance(answered, types.CreateMessageResult)
    assert bob.asked == [] and bob.records == [] and alice.asked == []
    assert [r[2] for r in alices_other.records] == ["alice's"]
    assert [m["content"] for m in alices_other.asked[0]["messages"]] == ["about alice's call"]


async def test_beside_an_embedders_call_the_client_is_not_shown_what_the_server_asks() -> None:
    requests = UpstreamRequests()
    callbacks = requests.callbacks("srv")
    client = Recorder()
    assert current_client.get() is None
    with requests.calling("srv"):  # the embedder's own call, with a user's data in it
        token = current_client.set(client)
        try:
            with requests.calling("srv"):  # an MCP client's call to the same server
                asked = sampling_request("about the embedder's call?")
                refused = await callbacks["sampling_callback"](None, asked)
                await callbacks["logging_callback"](record("whose?"))
        finally:
            current_client.reset(token)

    assert isinstance(refused, types.ErrorData)
    assert "calls from 2 clients are in progress to server 'srv'" in refused.message
    assert client.asked == [] and client.records == []
