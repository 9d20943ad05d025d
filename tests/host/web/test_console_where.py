"""The console says where each runner of a plugin is: every replica, every remote runner."""

from __future__ import annotations

import asyncio
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from plughost.host import PluginHost
from plughost.settings import RemoteSettings, WebSettings
from plughost.web import WebConsole
from tests.conftest import TEST_PLUGINS, HostFactory, fast_settings
from tests.integration.remote_helpers import (
    PLUGIN_ID,
    healthy_members,
    issue,
    pause,
    plugin_dir,
    start_runner,
    stop,
)
from tests.waiting import wait_until


async def _row(client: httpx2.AsyncClient, plugin_id: str) -> dict[str, Any]:
    overview = (await client.get("/api/overview")).json()
    (row,) = [p for p in overview["plugins"] if p["plugin_id"] == plugin_id]
    return dict(row)


def _auth(console: WebConsole) -> dict[str, str]:
    return {"authorization": f"Bearer {console.token}"}


@pytest.fixture
def runner(tmp_path: Path) -> Iterator[Callable[[str, Path], subprocess.Popen[bytes]]]:
    """Start ``plughost-runner`` serving the test plugin; every one is stopped at the end."""
    started: list[subprocess.Popen[bytes]] = []

    def start(endpoint: str, credential: Path) -> subprocess.Popen[bytes]:
        plugins = plugin_dir(tmp_path / "remote-plugins")
        started.append(start_runner(endpoint, credential, plugins, tmp_path))
        return started[-1]

    yield start
    for process in started:
        stop(process)


async def test_every_replica_is_listed_with_the_pid_it_runs_as(
    make_host: HostFactory, tmp_path: Path
) -> None:
    settings = fast_settings(tmp_path).model_copy(update={"plugin_replicas": {"tests.echo": 2}})
    async with (
        make_host([TEST_PLUGINS / "echo"], settings) as host,
        WebConsole(host, WebSettings(address="127.0.0.1:0")) as console,
        httpx2.AsyncClient(base_url=console.url.rstrip("/"), headers=_auth(console)) as client,
    ):
        replicas = host.runners_for("tests.echo")
        await wait_until(
            lambda: len(replicas) == 2 and all(r.healthy for r in replicas),
            timeout=30,
            what="two healthy replicas",
        )
        row = await _row(client, "tests.echo")

    members = row["members"]
    assert [m["runner_id"] for m in members] == [r.runner_id for r in replicas]
    assert [m["where"] for m in members] == [f"local pid {r.pid}" for r in replicas]
    assert len({m["where"] for m in members}) == 2
    assert all(m["remote"] is False and m["state"] == "ready" and m["healthy"] for m in members)


async def test_a_remote_runner_is_listed_with_its_address_and_credential_and_when_lost(
    tmp_path: Path, runner: Callable[[str, Path], subprocess.Popen[bytes]]
) -> None:
    remote = RemoteSettings(listen="tcp://127.0.0.1:*", keys_dir=tmp_path / "keys", grace=30.0)
    settings = fast_settings(tmp_path).model_copy(update={"remote": remote})
    credential = issue(tmp_path / "keys", "console-box", [PLUGIN_ID], tmp_path / "box.json")
    async with (
        PluginHost(settings=settings) as host,
        WebConsole(host, WebSettings(address="127.0.0.1:0")) as console,
        httpx2.AsyncClient(base_url=console.url.rstrip("/"), headers=_auth(console)) as client,
    ):
        assert host.remote is not None
        process = runner(host.remote.listener.endpoint, credential)
        await wait_until(lambda: healthy_members(host) == 1, timeout=30, what="runner joined")
        joined = await _row(client, PLUGIN_ID)
        call = asyncio.create_task(pause(host, 1.0))

        async def busy() -> bool:
            return [m["inflight"] for m in (await _row(client, PLUGIN_ID))["members"]] == [1]

        await wait_until(busy, timeout=10, what="the call shown in flight")
        assert (await call).success

        stop(process)

        async def lost() -> bool:
            members = (await _row(client, PLUGIN_ID))["members"]
            return bool(members) and members[0]["state"] == "lost"

        await wait_until(lost, timeout=30, what="the member shown lost")
        after = await _row(client, PLUGIN_ID)

    (member,) = joined["members"]
    assert member["remote"] is True and member["state"] == "ready" and member["healthy"]
    assert re.fullmatch(
        r"127\.0\.0\.1(:\d+)? \(credential console-box, pid \d+ there\)", member["where"]
    )
    assert member["runner_id"].startswith("console-box@")
    (gone,) = after["members"]
    assert gone["runner_id"] == member["runner_id"] and gone["healthy"] is False
    assert after["state"] == "lost"
