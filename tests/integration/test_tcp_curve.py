"""Runners over tcp://: CurveZMQ encrypts and authenticates; strangers are refused."""

from __future__ import annotations

import asyncio
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import zmq
import zmq.asyncio

from plughost.host import PluginHost
from plughost_sdk import wire
from tests.conftest import TEST_PLUGINS, HostFactory

ECHO = TEST_PLUGINS / "echo"


@pytest.fixture
async def host(make_host: HostFactory) -> AsyncIterator[PluginHost]:
    async with make_host([ECHO], transport="tcp") as started:
        yield started


def _channel(host: PluginHost):  # type: ignore[no-untyped-def]
    runner = host.runner_for("tests.echo")
    assert runner is not None
    assert runner._channel is not None
    return runner._channel


async def test_a_tcp_runner_serves_calls_over_an_encrypted_socket(host: PluginHost) -> None:
    assert _channel(host).endpoint.startswith("tcp://127.0.0.1:")
    assert (await host.invoke("echo", {"text": "over curve"})).content == "over curve"


async def test_the_server_secret_key_is_readable_by_the_owner_only(host: PluginHost) -> None:
    assert host._sockets is not None
    secret = host._sockets.path / "server.key_secret"
    assert secret.is_file()
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600


async def _probe(endpoint: str, keys: tuple[bytes, bytes, bytes] | None) -> bool:
    """Send a hello as a stranger; True if anything at all comes back within a second."""
    context = zmq.asyncio.Context()
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    if keys is not None:
        server, public, secret = keys
        sock.setsockopt(zmq.CURVE_SERVERKEY, server)
        sock.setsockopt(zmq.CURVE_PUBLICKEY, public)
        sock.setsockopt(zmq.CURVE_SECRETKEY, secret)
    sock.connect(endpoint)
    try:
        hello = wire.request(1, "runner.hello", {"token": "x", "protocol": 1, "pid": 1})
        try:
            # A DEALER holds a frame until a connection takes it: one the handshake keeps
            # refusing may never take it, and then nothing came back either.
            await asyncio.wait_for(sock.send(wire.encode(hello)), 1)
        except TimeoutError:
            return False
        return await sock.poll(1000) != 0
    finally:
        sock.close()
        context.term()


async def test_a_client_without_curve_keys_gets_nothing_through(host: PluginHost) -> None:
    channel = _channel(host)
    before = channel.rejected_frames
    assert await _probe(channel.endpoint, None) is False
    assert channel.rejected_frames == before  # the frame never reached the host


async def test_a_client_with_the_server_key_but_a_key_the_host_never_issued_is_refused(
    host: PluginHost,
) -> None:
    assert host._curve is not None
    channel = _channel(host)
    before = channel.rejected_frames
    public, secret = zmq.curve_keypair()
    assert await _probe(channel.endpoint, (host._curve.server_public, public, secret)) is False
    assert channel.rejected_frames == before
    assert (await host.invoke("echo", {"text": "still fine"})).content == "still fine"


async def test_a_client_with_an_issued_key_reaches_the_host_and_still_needs_the_token(
    host: PluginHost, tmp_path: Path
) -> None:
    assert host._curve is not None
    keys = host._curve.issue()
    try:
        answered = await _probe(
            _channel(host).endpoint, (host._curve.server_public, keys.public, keys.secret)
        )
    finally:
        host._curve.revoke(keys)
    assert answered is True  # the handshake passed; the forged token is refused at hello
