"""The host's end of a runner socket, against a raw DEALER peer in the same process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import zmq
import zmq.asyncio

from plughost.runners.channel import RunnerChannel
from plughost_sdk import wire
from tests.waiting import wait_until

TOKEN = "channel-test-token"


@dataclass
class Pair:
    channel: RunnerChannel
    peer: zmq.asyncio.Socket
    events: list[wire.Envelope] = field(default_factory=list)


async def _answer(envelope: wire.Envelope) -> Any:
    return {"echo": envelope["body"]}


@pytest.fixture
async def pair(tmp_path: Path) -> AsyncIterator[Pair]:
    context = zmq.asyncio.Context()
    # Small queues towards the peer, so that a burst of large frames fills them.
    context.setsockopt(zmq.SNDHWM, 4)
    events: list[wire.Envelope] = []
    channel = RunnerChannel(
        context,
        f"ipc://{tmp_path}/channel.sock",
        TOKEN,
        hello_reply=lambda hello: {"welcome": True},
        on_request=_answer,
        on_event=events.append,
        max_message_bytes=wire.DEFAULT_MAX_MESSAGE_BYTES,
    )
    peer = context.socket(zmq.DEALER)
    peer.setsockopt(zmq.RCVHWM, 4)
    peer.setsockopt(zmq.LINGER, 0)
    peer.connect(channel.endpoint)
    serving = asyncio.create_task(channel.run())
    try:
        hello = {"token": TOKEN, "protocol": wire.PROTOCOL_VERSION, "pid": 1}
        await peer.send(wire.encode(wire.request(1, "runner.hello", hello)))
        async with asyncio.timeout(10):
            reply = wire.decode(await peer.recv())
        assert reply["body"] == {"welcome": True}
        yield Pair(channel, peer, events)
    finally:
        serving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await serving
        channel.close()
        peer.close()
        context.term()


async def _round_trip(pair: Pair) -> Any:
    call = asyncio.create_task(pair.channel.request("runner.health", {"n": 1}, timeout=10))
    async with asyncio.timeout(10):
        request = wire.decode(await pair.peer.recv())
    await pair.peer.send(wire.encode(wire.response(request, {"ok": request["body"]})))
    return await call


async def test_channel_pairs_a_request_with_its_reply(pair: Pair) -> None:
    assert await _round_trip(pair) == {"ok": {"n": 1}}
    assert pair.channel.inflight == 0


async def test_channel_times_out_and_tells_the_runner_to_cancel(pair: Pair) -> None:
    with pytest.raises(TimeoutError):
        await pair.channel.request("runner.health", None, timeout=0.05)
    async with asyncio.timeout(10):
        messages = wire.decode_many(await pair.peer.recv())
        if len(messages) == 1:
            messages += wire.decode_many(await pair.peer.recv())
        request, cancel = messages
    assert cancel["method"] == "call.cancel"
    assert cancel["body"] == {"id": request["id"]}
    assert pair.channel.inflight == 0


async def test_channel_answers_requests_and_delivers_events_from_the_runner(pair: Pair) -> None:
    await pair.peer.send(wire.encode(wire.event("runner.heartbeat", {"seq": 1})))
    await pair.peer.send(wire.encode(wire.request(5, "capability.call", {"x": 1})))
    async with asyncio.timeout(10):
        reply = wire.decode(await pair.peer.recv())
    assert reply["id"] == 5
    assert reply["body"] == {"echo": {"x": 1}}
    assert [e["method"] for e in pair.events] == ["runner.heartbeat"]


async def test_channel_rejects_a_message_of_more_than_one_frame_and_keeps_serving(
    pair: Pair,
) -> None:
    before = pair.channel.rejected_frames
    await pair.peer.send_multipart([b"one", wire.encode(wire.event("runner.heartbeat", {}))])
    await wait_until(
        lambda: pair.channel.rejected_frames == before + 1, timeout=10, what="rejection"
    )
    assert await _round_trip(pair) == {"ok": {"n": 1}}


async def test_channel_sends_wait_while_the_runner_queue_is_full_then_all_arrive_in_order(
    pair: Pair,
) -> None:
    frames = 200
    payload = b"\0" * 512 * 1024  # 100 MB in all: far more than the socket buffers hold
    sends = [
        asyncio.create_task(pair.channel.send(wire.event("log.batch", {"n": n, "data": payload})))
        for n in range(frames)
    ]
    _, waiting = await asyncio.wait(sends, timeout=0.5)
    assert waiting, "every send finished although the runner's queue was full and nothing was read"
    received: list[int] = []
    async with asyncio.timeout(60):
        while len(received) < frames:
            received += [e["body"]["n"] for e in wire.decode_many(await pair.peer.recv())]
        await asyncio.gather(*sends)
    assert received == list(range(frames))


async def test_a_stranger_packing_many_hellos_in_one_frame_gets_one_refusal(pair: Pair) -> None:
    stranger = pair.peer.context.socket(zmq.DEALER)
    stranger.setsockopt(zmq.LINGER, 0)
    stranger.connect(pair.channel.endpoint)
    try:
        hello = {"token": "forged", "protocol": wire.PROTOCOL_VERSION, "pid": 2}
        frame = b"".join(wire.encode(wire.request(n, "runner.hello", hello)) for n in range(50))
        before = pair.channel.rejected_frames
        await stranger.send(frame)
        async with asyncio.timeout(10):
            refusal = wire.decode_many(await stranger.recv())
        await wait_until(
            lambda: pair.channel.rejected_frames == before + 2, timeout=10, what="rejections"
        )
        assert [e["error"]["code"] for e in refusal] == ["unauthorized"]
        assert not await stranger.poll(200)  # and no second refusal follows
        assert pair.channel.rejected_frames == before + 2  # the hello, then the rest at once
    finally:
        stranger.close()
