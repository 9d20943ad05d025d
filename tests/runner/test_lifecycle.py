"""The runner's start-up, in process: a remote runner asks a host that is late again."""

from __future__ import annotations

import asyncio
import functools

import pytest
import zmq
import zmq.asyncio

from plughost_runner.process.capture import LogCollector
from plughost_runner.process.credentials import Credentials
from plughost_runner.service import RunnerService
from plughost_sdk import wire


async def _next_hello(host: zmq.asyncio.Socket) -> tuple[bytes, wire.Envelope]:
    """The routing id of the runner that sent the next message, and its one envelope."""
    routing_id, frame, *_ = await host.recv_multipart()
    [envelope] = wire.decode_many(frame)
    assert envelope["method"] == "runner.hello", envelope
    return routing_id, envelope


async def test_a_remote_runner_asks_again_when_its_first_hello_gets_no_answer(
    capfd: pytest.CaptureFixture[str],
) -> None:
    context = zmq.asyncio.Context()
    host = context.socket(zmq.ROUTER)
    host.bind("tcp://127.0.0.1:*")
    endpoint = host.getsockopt_string(zmq.LAST_ENDPOINT)
    credentials = Credentials(bytearray(b"token-for-one-hello"))
    # offers=[]: a remote runner, which found its plugins itself (none here).
    service = RunnerService(endpoint, "runner-remote", credentials, LogCollector(), offers=[])
    try:
        async with asyncio.timeout(10), asyncio.TaskGroup() as group:
            on_frame = functools.partial(service._on_frame, group)
            serving = group.create_task(service._transport.serve(on_frame))
            hello = group.create_task(service._hello(timeout=0.2))
            _, first = await _next_hello(host)  # left unanswered
            routing_id, second = await _next_hello(host)
            answer = wire.response(second, {"accepted": []})
            await host.send_multipart([routing_id, *wire.encode_parts(answer)])
            accepted = await hello
            serving.cancel()
    finally:
        service._transport.close()
        host.close(linger=0)
        context.term()

    assert accepted == {"accepted": []}
    assert second["id"] != first["id"]
    assert first["body"]["token"] == second["body"]["token"] == "token-for-one-hello"
    assert not any(credentials.token), "the token outlived the answered hello"
    assert "no answer from the host yet" in capfd.readouterr().err
