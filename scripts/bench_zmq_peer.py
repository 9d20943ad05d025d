"""The raw baseline of scripts/bench_runner.py: a pyzmq DEALER that answers msgpack requests.

It does the least a runner can do: connect to the benchmark's ROUTER over
asyncio pyzmq, decode each request, and send an encoded reply. There is no
dispatch table, no plugin, no validation and no result model; ``image``
builds its bytes the way the echo plugin does, so both sides do the same work.
``image_frame`` sends the same bytes as their own frame without a copy
(``copy=False``), the envelope carrying a msgpack ext that points at it: the
zero-copy floor for media over ZeroMQ.

Run by the benchmark as ``python bench_zmq_peer.py ENDPOINT``.
"""

from __future__ import annotations

import asyncio
import sys

import msgpack
import zmq
import zmq.asyncio

PNG_HEADER = b"\x89PNG\r\n\x1a\n"


def answer(request: dict[str, object]) -> dict[str, object]:
    """The reply to one request."""
    if request["op"] in ("image", "image_frame"):
        size = int(request["size"])  # type: ignore[call-overload]
        data = PNG_HEADER + b"\0" * max(0, size - len(PNG_HEADER))
        return {"id": request["id"], "data": data}
    return {"id": request["id"], "content": request["text"]}


async def serve(endpoint: str) -> None:
    """Say hello, then answer requests until the benchmark closes the socket."""
    context = zmq.asyncio.Context()
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    await sock.send(msgpack.packb({"id": 0, "op": "hello"}))
    while True:
        request = msgpack.unpackb(await sock.recv())
        if request["op"] == "stop":
            break
        reply = answer(request)
        if request["op"] == "image_frame":
            data = reply["data"]
            reply["data"] = msgpack.ExtType(1, (1).to_bytes(4, "big"))
            await sock.send_multipart([msgpack.packb(reply), data], copy=False)
        else:
            await sock.send(msgpack.packb(reply))
    sock.close()
    context.term()


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1]))
