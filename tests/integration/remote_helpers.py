"""Shared pieces of the remote-runner tests: a plugin, credentials, runner processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, BinaryIO

from plughost.host import PluginHost, PluginStatus
from plughost.remote.keys import AllowEntry, RemoteKeyStore
from plughost.remote.member import RemoteRunner
from plughost.runners.pool import RunnerPool
from plughost.settings import HostSettings, RemoteSettings
from plughost_sdk.models import ToolExecutionResult
from tests.conftest import fast_settings
from tests.integration.test_replicas import write_plugin

PLUGIN_ID = "tests.replicated"
RUNNER = Path(sys.executable).parent / "plughost-runner"


def remote_settings(
    tmp_path: Path, listen: str = "tcp://127.0.0.1:*", **runner: Any
) -> HostSettings:
    """Fast settings for a host that listens for remote runners on loopback.

    ``runner`` overrides fields of ``[host.runner]`` (heartbeat interval, limits).
    """
    remote = RemoteSettings(listen=listen, keys_dir=tmp_path / "keys", grace=30.0)
    return fast_settings(tmp_path, **runner).model_copy(update={"remote": remote})


def issue(
    keys_dir: Path, name: str, allow: list[str], out: Path, grants: list[str] | None = None
) -> Path:
    """Issue a credential as ``plughost runner-credentials new`` does; return its file."""
    entries = [AllowEntry.parse(a) for a in allow]
    credential = RemoteKeyStore(keys_dir).issue(name, entries, "", grants)
    out.write_text(json.dumps(credential))
    out.chmod(0o600)
    return out


def plugin_dir(root: Path, version: str = "1.0.0", plugin_id: str = PLUGIN_ID) -> Path:
    """A folder holding one copy of the test plugin (under ``plugin_id``)."""
    folder = root / plugin_id
    write_plugin(folder, version)
    if plugin_id != PLUGIN_ID:
        manifest = json.loads((folder / "_manifest.json").read_text())
        manifest["id"] = plugin_id
        (folder / "_manifest.json").write_text(json.dumps(manifest))
    return root


def start_runner(
    endpoint: str,
    credential: Path,
    plugins: Path,
    work: Path,
    prefix: tuple[str, ...] = (),
    extra: tuple[str, ...] = (),
    *,
    env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``plughost-runner --connect`` (optionally inside ``prefix``, e.g. ip netns exec).

    ``extra`` are more options of the runner's command line (``--drain-timeout 1``),
    ``env`` more environment variables. Its output goes to ``work/runner-<pid>.log``
    (see :func:`runner_log`).
    """
    log_file = work / f"runner-{os.urandom(3).hex()}.log"
    with log_file.open("wb") as log:
        process = _popen(prefix, endpoint, credential, plugins, work, log, extra, env)
    log_file.rename(work / f"runner-{process.pid}.log")
    return process


def runner_log(work: Path, process: subprocess.Popen[bytes]) -> str:
    """What a runner started by :func:`start_runner` has written so far."""
    return (work / f"runner-{process.pid}.log").read_text(errors="replace")


def _popen(
    prefix: tuple[str, ...],
    endpoint: str,
    credential: Path,
    plugins: Path,
    work: Path,
    log: BinaryIO,
    extra: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            *prefix,
            str(RUNNER),
            "--connect",
            endpoint,
            "--credentials",
            str(credential),
            "--plugins",
            str(plugins),
            "--data-dir",
            str(work / "runner-data"),
            *extra,
        ],
        env={**os.environ, **env} if env else None,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(process: subprocess.Popen[bytes]) -> None:
    """Kill a runner process (and its group) and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def listening_at(host: PluginHost) -> str:
    """The endpoint the host accepts remote runners on."""
    assert host.remote is not None
    return host.remote.listener.endpoint


def remote_pool(host: PluginHost, plugin_id: str = PLUGIN_ID) -> RunnerPool[RemoteRunner] | None:
    assert host.remote is not None
    return host.remote.pools.get(plugin_id)


def healthy_members(host: PluginHost, plugin_id: str = PLUGIN_ID) -> int:
    pool = remote_pool(host, plugin_id)
    return len(pool.healthy()) if pool is not None else 0


async def pause(host: PluginHost, seconds: float) -> ToolExecutionResult:
    return await host.invoke("pause", {"seconds": seconds}, trusted=True)


def logged(caplog_records: list[logging.LogRecord], text: str) -> bool:
    return any(text in record.getMessage() for record in caplog_records)


async def exited(process: subprocess.Popen[bytes], timeout: float) -> int | None:
    """The process's exit code once it exits within ``timeout``, else None."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        code = process.poll()
        if code is not None:
            return code
        await asyncio.sleep(0.05)  # polling another process's exit
    return None


def status_of(host: PluginHost, plugin_id: str = PLUGIN_ID) -> PluginStatus:
    """The plugin's row of ``host.status()``."""
    return next(s for s in host.status() if s.plugin_id == plugin_id)
