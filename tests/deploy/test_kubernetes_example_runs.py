"""The Kubernetes example, run on this machine without Kubernetes.

The host starts as its image's entrypoint does, with the ConfigMap's own
configuration (only the addresses and absolute paths moved into a temporary
folder); the credential is issued with the README's allow-list and endpoint; a
runner starts with its image's entrypoint and the Deployment's args, serving
the plugins ``runner-plugins.Dockerfile`` copies. Then what the README promises
is checked: the runner joins, the console says where it is, a call goes
through, a TCP probe of the runner port is not taken for a runner, MCP HTTP
wants its bearer token, and a runner stopped as a rollout stops a pod drains,
exits 0 and leaves its pools at once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.example import (
    DEPLOY,
    HOST,
    RUNNER,
    RUNNER_PLUGINS,
    container,
    manifest,
    pod_spec,
)
from tests.waiting import wait_until

README = (DEPLOY / "README.md").read_text(encoding="utf-8")
RUNNER_SCRIPT = Path(sys.executable).parent / "plughost-runner"
CREDENTIAL = "runners-1"


class Logged:
    """A process whose stderr is collected line by line as it runs."""

    def __init__(self, command: list[str], cwd: Path) -> None:
        self.process = subprocess.Popen(
            command,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self.started = time.monotonic()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)

    def text(self) -> str:
        return "".join(self.lines)

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            code = self.process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            code = self.process.wait()
        self._reader.join(5)
        if self.process.stderr is not None:
            self.process.stderr.close()
        return code


@dataclass
class Cluster:
    """The host and the runner of the example, and where to reach them."""

    host: Logged
    runner: Logged
    remote_port: int
    mcp_port: int
    console: str
    token: str
    serve: list[str]
    workdir: Path

    async def restart_host(self) -> None:
        """Stop the host as Kubernetes stops a pod, and start it again on the same files."""
        assert self.host.stop(signal.SIGTERM) == 0
        self.host = Logged(self.serve, self.workdir)
        await wait_until(lambda: _console_address(self.host)[0] != "", timeout=60, what="console")
        self.console, self.token = _console_address(self.host)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _readme_allow_list() -> list[str]:
    command = README[README.index("plughost runner-credentials new") :]
    command = command[: command.index("--config")]
    return re.findall(r"--plugin (\S+)", command)


def _local_config(root: Path, remote_port: int, mcp_port: int) -> Path:
    """The ConfigMap's TOML with its addresses and absolute paths moved under ``root``."""
    text = manifest("ConfigMap", "plughost-host-config")["data"]["plughost.toml"]
    moves = {
        "tcp://0.0.0.0:7700": f"tcp://127.0.0.1:{remote_port}",
        '"0.0.0.0:8765"': f'"127.0.0.1:{mcp_port}"',
        '"127.0.0.1:8770"': '"127.0.0.1:0"',
        '"/var/lib/plughost/': f'"{root}/var/',
        '"/tmp/plughost"': f'"{root}/tmp"',
        '"/run/plughost/': f'"{root}/run/',
        '["/plugins"]': f'["{root}/host-plugins"]',
    }
    for old, new in moves.items():
        assert old in text, f"the ConfigMap no longer has {old}: update this test"
        text = text.replace(old, new)
    assert not re.search(r'"/(var|run|etc|plugins)\b', text), text
    (root / "host-plugins").mkdir()  # the host image's empty /plugins
    (root / "run").mkdir()
    config = root / "plughost.toml"
    config.write_text(text)
    return config


def _runner_plugins(root: Path) -> Path:
    """What runner-plugins.Dockerfile copies to /plugins, copied under ``root``."""
    plugins = root / "runner-plugins"
    for copy in RUNNER_PLUGINS.final.all("COPY"):
        source, target = copy.args
        assert target.startswith("/plugins/")
        shutil.copytree(DEPLOY.parents[1] / source, plugins / target.removeprefix("/plugins/"))
    return plugins


def _runner_command(root: Path, remote_port: int, credential: Path) -> list[str]:
    (entrypoint,) = RUNNER.final.all("ENTRYPOINT")
    args = [*entrypoint.args[1:], *container("plughost-runner", "runner")["args"]]
    moves = {
        "/run/secrets/plughost/credentials.json": str(credential),
        "/plugins": str(_runner_plugins(root)),
        "/var/lib/plughost": str(root / "runner-data"),
        "tcp://plughost-host:7700": f"tcp://127.0.0.1:{remote_port}",
    }
    assert set(moves) <= set(args), args
    return [str(RUNNER_SCRIPT), *(moves.get(a, a) for a in args)]


def _issue(config: Path, out: Path) -> None:
    allow = [a for p in _readme_allow_list() for a in ("--plugin", p)]
    endpoint = re.search(r"--endpoint (\S+)", README)
    assert allow and endpoint
    subprocess.run(
        [sys.executable, "-m", "plughost", "runner-credentials", "new", CREDENTIAL, *allow,
         "--endpoint", endpoint[1], "--config", str(config), "--out", str(out)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip


def _get(url: str, token: str = "") -> Any:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def _post(url: str, body: dict[str, Any], token: str = "") -> tuple[int, bytes]:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _console_address(host: Logged) -> tuple[str, str]:
    for line in host.lines:
        if line.startswith('{"event": "web.started"'):
            started = json.loads(line)
            return started["url"].rstrip("/"), started["login_url"].split("#token=")[1]
    return "", ""


@pytest.fixture
async def cluster(tmp_path: Path) -> Iterator[Cluster]:
    remote_port, mcp_port = _free_port(), _free_port()
    config = _local_config(tmp_path, remote_port, mcp_port)
    (tmp_path / "run" / "mcp-token").write_text("k8s-example-token-0123456789\n")
    (tmp_path / "run" / "mcp-token").chmod(0o600)  # what the init container leaves
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    credential = secrets / "credentials.json"
    _issue(config, credential)

    (entrypoint,) = HOST.final.all("ENTRYPOINT")
    serve = [a if a != "/etc/plughost/plughost.toml" else str(config) for a in entrypoint.args]
    command = [sys.executable, "-m", "plughost", *serve[1:]]
    host = Logged(command, tmp_path)
    runner: Logged | None = None
    made: Cluster | None = None
    try:
        await wait_until(lambda: _console_address(host)[0] != "", timeout=60, what="console up")
        await wait_until(lambda: _port_open(remote_port), timeout=30, what="runner port open")
        runner = Logged(_runner_command(tmp_path, remote_port, credential), tmp_path)
        runner.started = time.monotonic()
        console, token = _console_address(host)
        made = Cluster(host, runner, remote_port, mcp_port, console, token, command, tmp_path)
        yield made
    finally:
        if runner is not None:
            runner.stop()
        (made.host if made is not None else host).stop(signal.SIGTERM)


def _port_open(port: int) -> bool:
    """What a Kubernetes tcpSocket probe does: connect, then close at once."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def _confinement(pid: int) -> dict[str, str]:
    """A process's seccomp mode, no_new_privs and capabilities, from /proc."""
    fields = ("Seccomp", "NoNewPrivs", "CapEff", "CapBnd")
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {k: v.strip() for k, _, v in (line.partition(":") for line in lines) if k in fields}


def _rows(cluster: Cluster) -> dict[str, dict[str, Any]]:
    overview = _get(f"{cluster.console}/api/overview", cluster.token)
    return {row["plugin_id"]: row for row in overview["plugins"]}


def _joined(cluster: Cluster, plugin_ids: list[str]) -> bool:
    rows = _rows(cluster)
    return all(
        p in rows
        and rows[p]["state"] == "loaded"
        and any(f"credential {CREDENTIAL}" in w for w in rows[p]["where"])
        for p in plugin_ids
    )


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_the_example_joins_serves_a_call_and_says_where_the_runner_is(
    cluster: Cluster,
) -> None:
    allowed = [a.partition("==")[0] for a in _readme_allow_list()]
    assert allowed == ["plughost.example-units", "plughost.example-image"]
    await wait_until(lambda: _joined(cluster, allowed), timeout=60, what="the runner joined")
    # Within minReadySeconds, the time Kubernetes gives a new runner pod before it
    # stops an old one in a rollout (on a loaded test machine, with margin to spare).
    ready = manifest("Deployment", "plughost-runner")["spec"]["minReadySeconds"]
    assert time.monotonic() - cluster.runner.started < ready
    joined = [json.loads(line) for line in cluster.host.lines if line.startswith("{")]
    assert any(
        "joined from" in str(j.get("message")) and f"credential {CREDENTIAL}" in str(j["message"])
        for j in joined
    ), cluster.host.text()

    status, body = _post(
        f"{cluster.console}/api/call",
        {"tool": "unit_convert", "arguments": {"value": 2, "from_unit": "km", "to_unit": "m"}},
        cluster.token,
    )
    assert status == 200, body
    assert json.loads(body)["result"]["content"] == "2 km = 2000 m"

    mcp = f"http://127.0.0.1:{cluster.mcp_port}/mcp"
    assert _post(mcp, {"jsonrpc": "2.0", "id": 1, "method": "ping"})[0] == 401
    assert _post(mcp, {}, "k8s-example-token-0123456789")[0] != 401

    for _ in range(3):
        assert _port_open(cluster.remote_port)  # probes while runners are connected
    assert _joined(cluster, allowed)
    # The runner's id names the machine it runs on (in a pod, the pod's name), and
    # where names its address, credential and pid (in a pod, 1: the entrypoint).
    row = _rows(cluster)["plughost.example-units"]
    pid = cluster.runner.process.pid
    assert row["runners"] == [f"{CREDENTIAL}@{socket.gethostname()}:{pid}"]
    assert row["where"] == [f"127.0.0.1 (credential {CREDENTIAL}, pid {pid} there)"]
    assert "refused" not in cluster.host.text(), cluster.host.text()
    # No sandbox of plughost's own around a runner it did not start: it is
    # confined exactly as whatever started it (here this test; there, the pod).
    assert len(_confinement(pid)) == 4
    assert _confinement(pid) == _confinement(os.getpid())


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_a_runner_stopped_like_a_pod_drains_exits_0_and_leaves_at_once(
    cluster: Cluster,
) -> None:
    allowed = [a.partition("==")[0] for a in _readme_allow_list()]
    await wait_until(lambda: _joined(cluster, allowed), timeout=60, what="the runner joined")
    # Kubernetes stops a container with SIGTERM; the runner drains and exits 0, within
    # the pod's grace period (the example's runner has nothing in flight to wait for).
    grace = pod_spec("plughost-runner")["terminationGracePeriodSeconds"]
    stopped = time.monotonic()
    assert cluster.runner.stop(signal.SIGTERM) == 0
    assert time.monotonic() - stopped < grace
    assert "draining 0 calls in flight (up to 25 s)" in cluster.runner.text()
    # Its plugins go at once: not "lost" for the heartbeat window, then the grace.
    await wait_until(
        lambda: not set(allowed) & set(_rows(cluster)),
        timeout=5,
        what="the runner's plugins left with it",
    )
    assert "drained its calls and left" in cluster.host.text()
    assert "fell silent" not in cluster.host.text()


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_a_host_restarted_on_its_claim_and_service_address_gets_its_runner_back(
    cluster: Cluster,
) -> None:
    allowed = [a.partition("==")[0] for a in _readme_allow_list()]
    await wait_until(lambda: _joined(cluster, allowed), timeout=60, what="the runner joined")
    before = _rows(cluster)["plughost.example-units"]["runners"]

    # A new pod: same keys_dir (the claim), same address (the Service), same runner.
    await cluster.restart_host()

    await wait_until(lambda: _joined(cluster, allowed), timeout=60, what="the runner rejoined")
    assert cluster.runner.process.poll() is None
    assert _rows(cluster)["plughost.example-units"]["runners"] == before
