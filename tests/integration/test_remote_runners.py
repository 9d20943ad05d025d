"""Remote runners over loopback TCP: join, balance, refusals, revocation, a killed runner."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import zmq
import zmq.asyncio

from plughost.host import PluginHost
from plughost.remote.keys import RemoteKeyStore
from plughost.settings import RemoteSettings
from plughost_sdk import wire
from tests.conftest import fast_settings
from tests.integration.remote_helpers import (
    PLUGIN_ID,
    exited,
    healthy_members,
    issue,
    logged,
    pause,
    plugin_dir,
    remote_pool,
    start_runner,
    stop,
)
from tests.waiting import wait_until


def endpoint(host: PluginHost) -> str:
    assert host.remote is not None
    return host.remote.listener.endpoint


async def test_two_remote_runners_share_the_calls_and_a_killed_one_fails_only_its_own(
    host: PluginHost, runners: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    credential = issue(tmp_path / "keys", "gpu-box", [PLUGIN_ID], tmp_path / "gpu.json")
    plugins = plugin_dir(tmp_path / "remote-plugins")
    for _ in range(2):
        runners.append(start_runner(endpoint(host), credential, plugins, tmp_path))
    await wait_until(lambda: healthy_members(host) == 2, timeout=30, what="two runners joined")
    status = next(s for s in host.status() if s.plugin_id == PLUGIN_ID)
    assert status.state == "loaded" and len(status.where) == 2
    assert all("127.0.0.1" in where and "credential gpu-box" in where for where in status.where)
    results = await asyncio.gather(*(pause(host, 0.3) for _ in range(8)))
    assert all(r.success for r in results), [r.error_message for r in results]
    assert sorted(Counter(r.structured_content["pid"] for r in results).values()) == [4, 4]

    pool = remote_pool(host)
    assert pool is not None
    victim_member = pool.members[0]
    calls = [asyncio.create_task(pause(host, 1.0)) for _ in range(8)]
    await wait_until(lambda: victim_member.inflight == 4, timeout=5, what="calls in flight")
    victim = next(p for p in runners if p.pid == victim_member.remote_pid)
    stop(victim)
    outcome = await asyncio.gather(*calls)
    failed = [r for r in outcome if not r.success]
    assert len(failed) == 4 and {r.error_code for r in failed} == {"plugin_crashed"}
    after = await asyncio.gather(*(pause(host, 0.1) for _ in range(4)))
    assert all(r.success for r in after)
    assert healthy_members(host) == 1


async def test_a_plugin_off_the_allow_list_and_an_unknown_key_are_refused_with_a_reason(
    host: PluginHost,
    runners: list[subprocess.Popen[bytes]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    credential = issue(tmp_path / "keys", "narrow", ["tests.other"], tmp_path / "narrow.json")
    runners.append(start_runner(endpoint(host), credential, plugin_dir(tmp_path / "p1"), tmp_path))
    assert await exited(runners[-1], timeout=30) == 3  # refused: nothing it offers is allowed
    assert logged(
        caplog.records,
        f"refused plugin {PLUGIN_ID} offered by credential narrow: plugin {PLUGIN_ID} is not "
        "on the allow-list of credential narrow",
    )
    # A version pin is checked too.
    pinned = issue(tmp_path / "keys", "pinned", [f"{PLUGIN_ID}==2.0.0"], tmp_path / "pin.json")
    runners.append(start_runner(endpoint(host), pinned, plugin_dir(tmp_path / "p2"), tmp_path))
    assert await exited(runners[-1], timeout=30) == 3
    assert logged(caplog.records, f"plugin {PLUGIN_ID} 1.0.0 is not allowed for credential pinned")
    # A key the host never issued does not get past the handshake.
    stranger = issue(tmp_path / "other-keys", "stranger", [PLUGIN_ID], tmp_path / "x.json")
    text = stranger.read_text()
    server = RemoteKeyStore(tmp_path / "keys").server_keys()[0].decode()
    other = RemoteKeyStore(tmp_path / "other-keys").server_keys()[0].decode()
    stranger.write_text(text.replace(other, server))
    runners.append(start_runner(endpoint(host), stranger, plugin_dir(tmp_path / "p3"), tmp_path))
    await wait_until(
        lambda: logged(caplog.records, "belongs to no credential (unknown or revoked)"),
        timeout=30,
        what="the unknown key is refused",
    )
    assert host.remote is not None and not host.remote.listener.runners()
    assert remote_pool(host) is None


async def test_revoking_a_credential_cuts_off_its_runner_at_once(
    host: PluginHost,
    runners: list[subprocess.Popen[bytes]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    credential = issue(tmp_path / "keys", "temp", [PLUGIN_ID], tmp_path / "temp.json")
    runners.append(start_runner(endpoint(host), credential, plugin_dir(tmp_path / "p"), tmp_path))
    await wait_until(lambda: healthy_members(host) == 1, timeout=30, what="the runner joined")
    assert (await pause(host, 0)).success
    caplog.set_level(logging.INFO)
    from plughost.cli.credentials import revoke_credential  # the CLI command itself

    config = tmp_path / "plughost.toml"
    config.write_text(f'[host.remote]\nkeys_dir = "{tmp_path / "keys"}"\n')
    revoke_credential.main(["temp", "--config", str(config)], standalone_mode=False)
    await wait_until(lambda: remote_pool(host) is None, timeout=5, what="the runner is cut off")
    assert logged(caplog.records, "credential temp was revoked")
    result = await pause(host, 0)
    assert not result.success and result.error_code == "tool_not_found"
    assert await exited(runners[-1], timeout=15) is not None  # told to stop
    # Started again with the revoked credential, it is refused at the handshake.
    runners.append(start_runner(endpoint(host), credential, plugin_dir(tmp_path / "q"), tmp_path))
    await wait_until(
        lambda: logged(caplog.records, "belongs to no credential (unknown or revoked)"),
        timeout=30,
        what="the revoked key is refused",
    )
    assert remote_pool(host) is None


class HandMadeRunner:
    """A DEALER with a credential's keys that says whatever a test makes it say."""

    def __init__(self, host: PluginHost, credential_file: Path) -> None:
        credential = json.loads(credential_file.read_text())
        self.context = zmq.asyncio.Context()
        self.sock = self.context.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.CURVE_SERVERKEY, credential["server_public"].encode())
        self.sock.setsockopt(zmq.CURVE_PUBLICKEY, credential["public"].encode())
        self.sock.setsockopt(zmq.CURVE_SECRETKEY, credential["secret"].encode())
        self.sock.connect(endpoint(host))
        self.events: list[wire.Envelope] = []

    async def ask(self, request_id: int, method: str, body: Any) -> wire.Envelope:
        await self.sock.send(wire.encode(wire.request(request_id, method, body)))  # type: ignore[arg-type]
        async with asyncio.timeout(10):
            while True:
                for envelope in wire.decode_many(await self.sock.recv()):
                    if envelope["kind"] == "response" and envelope["id"] == request_id:
                        return envelope
                    self.events.append(envelope)

    async def join(self, runner_id: str, offers: list[dict[str, Any]]) -> wire.Envelope:
        hello = {"token": "", "protocol": wire.PROTOCOL_VERSION, "runner_id": runner_id, "pid": 1}
        return await self.ask(1, "runner.hello", {**hello, "offers": offers})

    async def next_request(self) -> wire.Envelope:
        """The next request the host sends (events and responses are set aside)."""
        async with asyncio.timeout(10):
            while True:
                for envelope in wire.decode_many(await self.sock.recv()):
                    if envelope["kind"] == "request":
                        return envelope
                    self.events.append(envelope)

    def close(self) -> None:
        self.sock.close(linger=0)
        self.context.destroy(linger=0)


OFFER = {"plugin_id": PLUGIN_ID, "version": "1.0.0", "plugin_sha256": ""}
TOOL = {"name": "pause", "description": "", "parameters_schema": {}}


async def test_a_runner_is_believed_only_about_accepted_plugins_and_gets_no_capabilities(
    host: PluginHost, tmp_path: Path
) -> None:
    """A hand-made runner (a DEALER with the credential's keys) claims more than it may."""
    liar = HandMadeRunner(host, issue(tmp_path / "keys", "liar", [PLUGIN_ID], tmp_path / "l.json"))
    try:
        smuggled = {"plugin_id": "tests.smuggled", "version": "1.0.0", "plugin_sha256": ""}
        welcome = await liar.join("liar", [OFFER, smuggled])
        assert welcome["body"]["accepted"] == [PLUGIN_ID]
        report = {
            "loaded": [
                {"plugin_id": PLUGIN_ID, "tools": [TOOL]},
                {"plugin_id": "tests.smuggled", "tools": [{**TOOL, "name": "smuggled"}]},
            ],
            "failed": [],
        }
        assert (await liar.ask(2, "runner.ready", report))["error"] is None
        await wait_until(lambda: healthy_members(host) == 1, timeout=5, what="it is a member")
        assert host.components.owner("tests.smuggled") is None
        assert [c.name for c in host.components.by_plugin(PLUGIN_ID)] == ["pause"]
        capability = {"capability": "tools.call", "args": {"name": "pause"}}
        refused = await liar.ask(3, "capability.call", capability)
        assert refused["error"] is not None and refused["error"]["code"] == "capability_denied"
        # A reload report with no accepted offer behind it changes no tool.
        sneaked = {"plugin_id": PLUGIN_ID, "tools": [{**TOOL, "name": "sneaked"}]}
        answer = await liar.ask(4, "plugin.reloaded", {"loaded": [sneaked], "failed": []})
        assert answer["error"] is None
        assert [c.name for c in host.components.by_plugin(PLUGIN_ID)] == ["pause"]
        # A plugin off the allow-list is refused before anything loads.
        refused = await liar.ask(5, "plugin.offer", {"offer": smuggled})
        assert refused["error"] is not None and refused["error"]["code"] == "unauthorized"
    finally:
        liar.close()


async def test_a_malformed_report_ends_its_runners_session_and_no_one_elses(
    host: PluginHost, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    credential = issue(tmp_path / "keys", "garbler", [PLUGIN_ID], tmp_path / "g.json")
    garbler, honest = HandMadeRunner(host, credential), HandMadeRunner(host, credential)
    try:
        await garbler.join("garbler", [OFFER])
        ready = {"loaded": [{"plugin_id": PLUGIN_ID, "tools": [TOOL]}], "failed": []}
        assert (await garbler.ask(2, "runner.ready", ready))["error"] is None
        # A plugin id that is no string is not believed, and costs nothing.
        odd = {"loaded": [{"plugin_id": ["x"], "tools": []}], "failed": [{"plugin_id": {}}]}
        assert (await garbler.ask(3, "plugin.reloaded", odd))["error"] is None
        # An accepted offer, then a report that names the plugin twice: a violation.
        assert (await garbler.ask(4, "plugin.offer", {"offer": OFFER}))["error"] is None
        twice = {"loaded": [ready["loaded"][0], ready["loaded"][0]], "failed": []}
        await garbler.sock.send(wire.encode(wire.request(5, "plugin.reloaded", twice)))
        # It is told to stop, as a revoked runner is, and its plugin's pool is gone.
        told = await garbler.next_request()
        assert told["method"] == "runner.shutdown"
        assert logged(caplog.records, "remote runner garbler broke the protocol")
        assert remote_pool(host) is None
    finally:
        garbler.close()
    try:
        # The listener goes on: another runner with the same credential joins and serves.
        welcome = await honest.join("honest", [OFFER])
        assert welcome["body"]["accepted"] == [PLUGIN_ID]
        ready = {"loaded": [{"plugin_id": PLUGIN_ID, "tools": [TOOL]}], "failed": []}
        assert (await honest.ask(2, "runner.ready", ready))["error"] is None
        await wait_until(lambda: healthy_members(host) == 1, timeout=5, what="it is a member")
    finally:
        honest.close()


async def test_a_plugin_the_host_runs_itself_is_not_taken_over_remotely(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    local = plugin_dir(tmp_path / "local")
    settings = fast_settings(tmp_path).model_copy(
        update={"remote": RemoteSettings(listen="tcp://127.0.0.1:*", keys_dir=tmp_path / "keys")}
    )
    credential = issue(tmp_path / "keys", "usurper", [PLUGIN_ID], tmp_path / "u.json")
    async with PluginHost([local], settings=settings) as plugin_host:
        runner = start_runner(
            endpoint(plugin_host), credential, plugin_dir(tmp_path / "remote"), tmp_path
        )
        try:
            assert await exited(runner, timeout=30) == 3
        finally:
            stop(runner)
        assert logged(
            caplog.records,
            f"plugin {PLUGIN_ID} belongs to this host's own plugin folder "
            f"{(local / PLUGIN_ID).resolve()}",
        )
        assert remote_pool(plugin_host) is None
        assert (await pause(plugin_host, 0)).success
