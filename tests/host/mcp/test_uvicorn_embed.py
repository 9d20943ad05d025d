"""bind: the listening socket the MCP server and the console serve on."""

from __future__ import annotations

import asyncio
import socket

from plughost.mcp.uvicorn_embed import bind


async def test_connections_accepted_on_a_bound_socket_send_small_writes_at_once() -> None:
    sock = bind("127.0.0.1", 0)
    accepted = asyncio.Event()
    nodelay: list[int] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("socket")
        nodelay.append(peer.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()
        accepted.set()

    server = await asyncio.start_server(on_connect, sock=sock)
    async with server:
        _, client = await asyncio.open_connection(*sock.getsockname())
        async with asyncio.timeout(10):
            await accepted.wait()
        client.close()
        await client.wait_closed()

    # Nagle's algorithm off: a response's second write does not wait for the client's ACK.
    assert len(nodelay) == 1 and nodelay[0] != 0
