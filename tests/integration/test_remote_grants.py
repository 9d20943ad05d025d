"""What the operator decides for a remote runner's plugins: capability grants, folder pins."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import subprocess
from pathlib import Path

import pytest

from plughost.cli.credentials import new_credential
from plughost.host import PluginHost
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

CALLER = Path(__file__).parent.parent / "plugins" / "caller"


def served_by(host: PluginHost, process: subprocess.Popen[bytes]) -> bool:
    """Whether ``process`` is the one healthy runner of tests.caller."""
    pool = remote_pool(host, "tests.caller")
    return pool is not None and [m.remote_pid for m in pool.healthy()] == [process.pid]


def endpoint(host: PluginHost) -> str:
    assert host.remote is not None
    return host.remote.listener.endpoint


async def relay(host: PluginHost) -> dict[str, object]:
    result = await host.invoke(
        "relay", {"name": "shout_back", "arguments": {"text": "hi"}}, trusted=True
    )
    assert result.success, result.error_message
    return dict(result.structured_content or {"content": result.content})


async def test_a_remote_plugin_calls_tools_through_the_host_only_as_its_credential_grants(
    host: PluginHost, runners: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    plugins = tmp_path / "remote-plugins"
    shutil.copytree(CALLER, plugins / "caller")  # its manifest asks for tools.call
    keys = tmp_path / "keys"
    granted = issue(keys, "granted", ["tests.caller"], tmp_path / "g.json", ["tools.call"])
    runners.append(start_runner(endpoint(host), granted, plugins, tmp_path))
    await wait_until(lambda: healthy_members(host, "tests.caller") == 1, timeout=30, what="join")
    answer = await relay(host)  # the remote plugin's ctx.call_tool, through the host
    assert answer["content"] == "HI" and answer["ok"] is True, answer
    stop(runners.pop())

    bare = issue(keys, "bare", ["tests.caller"], tmp_path / "b.json")  # no --grant
    runners.append(start_runner(endpoint(host), bare, plugins, tmp_path))
    await wait_until(lambda: served_by(host, runners[-1]), timeout=30, what="the second joined")
    answer = await relay(host)
    assert answer["content"] == "refused" and answer["code"] == "capability_denied", answer
    assert "credential bare does not grant it" in str(answer["reason"])
    assert "--grant tools.call" in str(answer["reason"])


async def test_a_grant_does_not_stretch_past_what_the_manifest_asks(
    host: PluginHost, runners: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    plugins = tmp_path / "remote-plugins"
    shutil.copytree(CALLER, plugins / "caller")
    manifest = json.loads((plugins / "caller" / "_manifest.json").read_text())
    manifest["capabilities"] = []
    (plugins / "caller" / "_manifest.json").write_text(json.dumps(manifest))
    wide = issue(tmp_path / "keys", "wide", ["tests.caller"], tmp_path / "w.json", ["*"])
    runners.append(start_runner(endpoint(host), wide, plugins, tmp_path))
    await wait_until(lambda: healthy_members(host, "tests.caller") == 1, timeout=30, what="join")
    answer = await relay(host)
    assert answer["code"] == "capability_denied", answer
    assert "add 'tools.call' to 'capabilities' in its _manifest.json" in str(answer["reason"])


async def test_a_credential_pinned_to_a_folder_refuses_another_manifest_and_says_which(
    host: PluginHost,
    runners: list[subprocess.Popen[bytes]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    plugins = plugin_dir(tmp_path / "remote-plugins")
    folder = plugins / PLUGIN_ID
    config = tmp_path / "plughost.toml"
    config.write_text(f'[host.remote]\nkeys_dir = "{tmp_path / "keys"}"\n')
    out = tmp_path / "pinned.json"
    args = ["pinned", "--pin", str(folder), "--out", str(out), "--config", str(config)]
    # The CLI command itself; it loads the plugin to pin what it declares, in a loop of its own.
    await asyncio.to_thread(new_credential.main, args, standalone_mode=False)
    pinned = json.loads(out.read_text())["plugins"][0]
    expected = pinned.partition("@sha256:")[2]
    assert pinned.startswith(f"{PLUGIN_ID}==1.0.0@sha256:") and len(expected) == 64

    original = (folder / "_manifest.json").read_text()
    manifest = json.loads(original)
    (folder / "_manifest.json").write_text(json.dumps({**manifest, "capabilities": ["*"]}))
    runners.append(start_runner(endpoint(host), out, plugins, tmp_path))
    assert await exited(runners[-1], timeout=30) == 3
    assert logged(caplog.records, f"sha256:{expected} expected, sha256:")
    refusal = next(r.getMessage() for r in caplog.records if "expected, sha256:" in r.getMessage())
    offered = refusal.rpartition("sha256:")[2].split()[0]
    assert len(offered) == 64 and offered != expected

    (folder / "_manifest.json").write_text(original)
    runners.append(start_runner(endpoint(host), out, plugins, tmp_path))
    await wait_until(lambda: healthy_members(host) == 1, timeout=30, what="the pinned one joined")
    assert (await pause(host, 0)).success
