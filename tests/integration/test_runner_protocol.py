"""The host's socket, handshake, capabilities, logs and environment, against real runners."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import stat
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import msgpack
import pytest
import zmq
import zmq.asyncio

from plughost.host import PluginHost
from plughost.runners.capabilities import CapabilityCall
from plughost_sdk import wire
from plughost_sdk.models import ToolExecutionContext
from tests.conftest import TEST_PLUGINS, HostFactory
from tests.fault_injection import kill_host_and_wait_for_its_children, runner_token
from tests.waiting import wait_until

ECHO = TEST_PLUGINS / "echo"


@pytest.fixture
async def host(make_host: HostFactory) -> AsyncIterator[PluginHost]:
    async with make_host([ECHO]) as started:
        yield started


def _endpoint(host: PluginHost) -> str:
    runner = host.runner_for("tests.echo")
    assert runner is not None and runner._channel is not None
    return runner._channel.endpoint


async def _send_raw(endpoint: str, frame: bytes, expect_reply: bool) -> bytes | None:
    context = zmq.asyncio.Context()
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 2000)  # deliver the frame even though we close at once
    sock.connect(endpoint)
    try:
        await sock.send(frame)
        if not expect_reply:
            return None
        async with asyncio.timeout(5):
            return bytes(await sock.recv())
    finally:
        sock.close()
        context.term()


async def test_garbage_bytes_on_the_host_socket_are_rejected_and_nothing_else_changes(
    host: PluginHost,
) -> None:
    runner = host.runner_for("tests.echo")
    assert runner is not None and runner._channel is not None
    before = runner._channel.rejected_frames
    await _send_raw(_endpoint(host), b"\x00\xffnot msgpack at all", expect_reply=False)
    await _send_raw(_endpoint(host), msgpack.packb({"v": 99}), expect_reply=False)
    channel = runner._channel
    await wait_until(lambda: channel.rejected_frames >= before + 2, timeout=5, what="rejections")
    assert (await host.invoke("echo", {"text": "fine"})).content == "fine"


async def test_a_hello_with_a_wrong_token_is_refused(host: PluginHost) -> None:
    hello = wire.request(
        1, "runner.hello", {"token": "forged", "protocol": wire.PROTOCOL_VERSION, "pid": 1}
    )
    reply = await _send_raw(_endpoint(host), wire.encode(hello), expect_reply=True)
    assert reply is not None
    decoded = wire.decode(reply)
    assert decoded["error"] is not None and decoded["error"]["code"] == "unauthorized"
    assert (await host.invoke("echo", {"text": "fine"})).content == "fine"


async def test_a_hello_with_another_protocol_version_is_refused_with_a_clear_reason(
    host: PluginHost,
) -> None:
    runner = host.runner_for("tests.echo")
    assert runner is not None and runner._channel is not None
    token = runner_token(runner._channel)
    hello = wire.request(1, "runner.hello", {"token": token, "protocol": 999, "pid": 1})
    reply = await _send_raw(_endpoint(host), wire.encode(hello), expect_reply=True)
    assert reply is not None
    error = wire.decode(reply)["error"]
    assert error is not None and error["code"] == "protocol_mismatch"
    assert "install matching" in error["message"]


async def test_capability_calls_reach_the_registered_handler_with_the_plugin_bound(
    host: PluginHost,
) -> None:
    seen: list[CapabilityCall] = []

    async def send_text(call: CapabilityCall) -> bool:
        seen.append(call)
        return True

    host.register_capability("send.text", send_text)
    context = ToolExecutionContext(stream_id="stream-7", session_id="s1")
    result = await host.invoke("say", {"text": "hi there"}, context)
    assert result.success, result.error_message
    assert result.structured_content["sent"] is True
    assert [(c.plugin_id, c.capability, c.args) for c in seen] == [
        ("tests.echo", "send.text", {"text": "hi there", "stream_id": "stream-7"})
    ]


async def test_a_capability_missing_from_the_manifest_is_denied(host: PluginHost) -> None:
    async def anything(call: CapabilityCall) -> int:
        return 1

    host.register_capability("db.*", anything)
    result = await host.invoke("use_capability", {"name": "db.query"})
    assert not result.success
    assert "may not call db.query" in result.error_message
    assert "_manifest.json" in result.error_message


async def test_a_capability_without_a_handler_is_not_provided(host: PluginHost) -> None:
    result = await host.invoke("use_capability", {"name": "store.get"})
    assert "capability store.get is not provided by this host" in result.error_message


async def test_prints_and_logger_records_reach_the_host_tagged_with_the_plugin(
    host: PluginHost, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    assert (await host.invoke("shout", {})).content == "shouted"
    expected = {"hello from print", "hello from the logger"}
    await wait_until(
        lambda: (
            expected
            <= {r.getMessage() for r in caplog.records if r.name == "plughost.plugin.tests.echo"}
        ),
        timeout=5,
        what="forwarded log lines",
    )


async def test_the_plugin_sees_its_config_and_the_call_context(host: PluginHost) -> None:
    config = await host.invoke("config_value", {})
    assert config.structured_content["config"] == {"greeting": {"word": "hello"}}
    echoed = await host.invoke("echo", {"text": "x"}, ToolExecutionContext(stream_id="chat-9"))
    assert echoed.structured_content["stream_id"] == "chat-9"


async def test_the_runner_environment_holds_no_host_secrets(
    make_host: HostFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("PLUGHOST_ALLOWED", "yes")
    async with make_host([ECHO], env_allowlist=["PLUGHOST_ALLOWED"]) as host:
        names = (await host.invoke("environment", {})).structured_content["names"]
    assert "OPENAI_API_KEY" not in names
    assert "PLUGHOST_RUNNER_TOKEN" not in names
    assert "PLUGHOST_ALLOWED" in names


async def test_ipc_sockets_live_in_a_directory_only_the_owner_can_enter(host: PluginHost) -> None:
    endpoint = _endpoint(host)
    socket_file = Path(endpoint.removeprefix("ipc://"))
    directory_mode = stat.S_IMODE(socket_file.parent.stat().st_mode)
    assert directory_mode == 0o700
    assert stat.S_IMODE(socket_file.stat().st_mode) & 0o077 == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another user needs root")
async def test_another_users_process_cannot_connect_to_a_runner_socket(host: PluginHost) -> None:
    path = _endpoint(host).removeprefix("ipc://")
    assert _connect_as(os.getuid(), os.getgid(), path) == "connected"  # the owner can
    assert _connect_as(65534, 65534, path) == "denied"  # nobody cannot


def _connect_as(uid: int, gid: int, path: str) -> str:
    """In a forked child running as ``uid``/``gid``, connect to the unix socket ``path``."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: only system calls, then _exit
        outcome = "unknown"
        try:
            if uid != os.getuid():
                os.setgroups([])
                os.setgid(gid)
                os.setuid(uid)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as peer:
                peer.connect(path)
            outcome = "connected"
        except PermissionError:
            outcome = "denied"
        except BaseException as exc:  # reported to the parent, which fails the test
            outcome = repr(exc)
        finally:
            os.write(write_end, outcome.encode())
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as answer:
        outcome = answer.read().decode()
    os.waitpid(pid, 0)
    return outcome


async def test_runners_exit_when_their_host_is_sigkilled(tmp_path: Path) -> None:
    script = tmp_path / "host.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import asyncio, sys
            from plughost.host import PluginHost
            async def main():
                async with PluginHost([{str(ECHO)!r}]) as host:
                    print(" ".join(str(r.pid) for r in host.runners()), flush=True)
                    await asyncio.Event().wait()
            asyncio.run(main())
            """
        )
    )
    await kill_host_and_wait_for_its_children(script, tmp_path, ready=30)
