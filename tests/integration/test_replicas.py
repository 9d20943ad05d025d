"""Replicas, real runners: balancing, a killed member fails only its calls, reload fails none."""

from __future__ import annotations

import asyncio
import json
import textwrap
from collections import Counter
from contextlib import AbstractAsyncContextManager
from pathlib import Path

from plughost.host import PluginHost
from plughost.runners.pool import RunnerPool
from plughost.runners.supervisor import RunnerSupervisor
from plughost_sdk.models import ToolExecutionResult
from tests.conftest import HOST_PIDS, HostFactory, fast_settings
from tests.waiting import wait_until

PLUGIN_ID = "tests.replicated"


def write_plugin(folder: Path, version: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    manifest = {
        "manifest_version": 2,
        "id": PLUGIN_ID,
        "version": version,
        "name": "replicated",
        "description": "answers with its pid after a pause",
        "author": {"name": "tests"},
        "license": "MIT",
    }
    (folder / "_manifest.json").write_text(json.dumps(manifest))
    source = f"""
        import asyncio
        import os
        from typing import Any
        from pydantic import BaseModel
        from plughost_sdk import Plugin, Tool
        from plughost_sdk.types import ToolParameterInfo, ToolParamType

        class Config(BaseModel):
            greeting: str = "hi"

        class Replicated(Plugin):
            config_model = Config

            @Tool(
                "pause",
                brief_description="Wait, then say who answered",
                parameters=[ToolParameterInfo(name="seconds", param_type=ToolParamType.NUMBER)],
                read_only=True,
            )
            async def pause(self, seconds: float, **kwargs: Any) -> dict[str, Any]:
                await asyncio.sleep(seconds)
                return {{"content": "{version}", "pid": os.getpid(),
                         "greeting": self.config.get("greeting")}}

        def create_plugin() -> Replicated:
            return Replicated()
        """
    (folder / "plugin.py").write_text(textwrap.dedent(source))


def replicated_host(
    tmp_path: Path, make_host: HostFactory, replicas: int = 2
) -> tuple[AbstractAsyncContextManager[PluginHost], Path]:
    root = tmp_path / "plugins"
    write_plugin(root / "replicated", "1.0.0")
    settings = fast_settings(tmp_path, sandbox=HOST_PIDS)  # members are told apart by pid
    settings = settings.model_copy(update={"plugin_replicas": {PLUGIN_ID: replicas}})
    return make_host([root], settings), root / "replicated"


def pool_of(host: PluginHost) -> RunnerPool[RunnerSupervisor]:
    pool = host.pool_for(PLUGIN_ID)
    assert pool is not None
    return pool


async def pause(host: PluginHost, seconds: float) -> ToolExecutionResult:
    return await host.invoke("pause", {"seconds": seconds}, trusted=True)


def pid_of(result: ToolExecutionResult) -> int:
    assert result.success, result.error_message
    return int(result.structured_content["pid"])


async def test_calls_go_to_the_least_loaded_member(tmp_path: Path, make_host: HostFactory) -> None:
    factory, _ = replicated_host(tmp_path, make_host)
    async with factory as host:
        pool = pool_of(host)
        assert len(pool.healthy()) == 2
        assert host.status()[0].runners == tuple(m.runner_id for m in pool.members)
        results = await asyncio.gather(*(pause(host, 0.3) for _ in range(8)))
        by_pid = Counter(pid_of(r) for r in results)
        assert sorted(by_pid.values()) == [4, 4]
        assert set(by_pid) == {m.pid for m in pool.members}
        # A member busy with a slow call is passed over while the other is idle.
        slow = asyncio.create_task(pause(host, 1.0))
        await wait_until(lambda: pool.inflight == 1, timeout=5, what="the slow call is sent")
        busy = next(m for m in pool.members if m.inflight == 1)
        quick = [pid_of(await pause(host, 0)) for _ in range(5)]
        assert busy.pid not in quick
        assert pid_of(await slow) == busy.pid


async def test_a_member_killed_mid_load_fails_only_its_own_calls(
    tmp_path: Path, make_host: HostFactory
) -> None:
    factory, _ = replicated_host(tmp_path, make_host)
    async with factory as host:
        pool = pool_of(host)
        victim, survivor = pool.members
        old_pid = victim.pid
        outcomes: list[ToolExecutionResult] = []
        for wave in range(6):  # load in waves of 8 calls in flight; the kill lands in wave 2
            calls = [asyncio.create_task(pause(host, 0.4)) for _ in range(8)]
            if wave == 2:
                await wait_until(
                    lambda: victim.inflight == 4 and survivor.inflight == 4,
                    timeout=5,
                    what="four calls in flight on each member",
                )
                in_flight_at_kill = victim.inflight
                victim.kill()
                killed_wave = await asyncio.gather(*calls)
                failed = [r for r in killed_wave if not r.success]
                assert len(failed) == in_flight_at_kill
                assert {r.error_code for r in failed} == {"plugin_crashed"}
                assert {pid_of(r) for r in killed_wave if r.success} == {survivor.pid}
                continue
            outcomes += await asyncio.gather(*calls)
        assert all(r.success for r in outcomes), [r.error_message for r in outcomes]
        await wait_until(lambda: victim.healthy, timeout=15, what="the killed member restarted")
        assert victim.pid != old_pid
        results = await asyncio.gather(*(pause(host, 0.2) for _ in range(4)))
        assert {pid_of(r) for r in results} == {victim.pid, survivor.pid}


async def test_reloading_replaces_members_one_at_a_time_and_fails_no_call(
    tmp_path: Path, make_host: HostFactory
) -> None:
    factory, folder = replicated_host(tmp_path, make_host)
    async with factory as host:
        pool = pool_of(host)
        old_pids = {m.pid for m in pool.members}
        stop = asyncio.Event()
        fewest = [len(pool.healthy())]

        async def load() -> list[ToolExecutionResult]:
            results = []
            while not stop.is_set():
                results.append(await pause(host, 0.05))
            return results

        async def sample() -> None:  # how many members serve, all through the reload
            while not stop.is_set():
                fewest[0] = min(fewest[0], len(pool.healthy()))
                await asyncio.sleep(0.005)

        clients = [asyncio.create_task(load()) for _ in range(4)]
        sampler = asyncio.create_task(sample())
        write_plugin(folder, "2.0.0")
        assert await host.reload_plugin(PLUGIN_ID)
        stop.set()
        results = [r for batch in await asyncio.gather(*clients) for r in batch]
        await sampler
        assert results and all(r.success for r in results), {r.error_code for r in results}
        assert fewest[0] == 2
        assert host.pool_for(PLUGIN_ID) is pool and len(pool.members) == 2
        new_pids = {m.pid for m in pool.members}
        assert not new_pids & old_pids
        after = await asyncio.gather(*(pause(host, 0.2) for _ in range(4)))
        assert {r.content for r in after} == {"2.0.0"}
        assert {pid_of(r) for r in after} == new_pids
        assert len(host.runners()) == 2  # the old members are stopped and forgotten


async def test_a_changed_config_reaches_every_member(
    tmp_path: Path, make_host: HostFactory
) -> None:
    factory, folder = replicated_host(tmp_path, make_host)
    async with factory as host:
        pool = pool_of(host)
        (folder / "config.toml").write_text('greeting = "hello"\n')
        assert await host.reloader.update_config(PLUGIN_ID)
        results = await asyncio.gather(*(pause(host, 0.3) for _ in range(4)))
        assert {pid_of(r) for r in results} == {m.pid for m in pool.members}
        assert {r.structured_content["greeting"] for r in results} == {"hello"}
