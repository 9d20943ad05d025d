"""What the host asks of each runner's sandbox, from the kernel's offer and the settings."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from plughost.host import PluginHost
from plughost.plugins.source import PluginSource
from plughost.runners import sandbox as sandbox_module
from plughost.runners import sandbox_probe
from plughost.runners.sandbox import (
    PROTECTIONS,
    SandboxReport,
    SandboxSupport,
    manifest_ports,
    runner_policy,
    sandbox_report,
)
from plughost.runners.spawn import runner_env
from plughost.settings import HostSettings, SandboxSettings
from plughost_sdk.errors import RunnerStartError
from plughost_sdk.manifest import parse_manifest

EVERYTHING = SandboxSupport(frozenset(PROTECTIONS), {}, 7)
NO_USERNS = SandboxSupport(
    frozenset(PROTECTIONS) - {"user_namespace", "network_namespace", "pid_namespace"},
    {"user_namespace": "max_user_namespaces is 0"},
    7,
)


def source(path: Path, network: dict[str, Any] | None = None) -> PluginSource:
    data: dict[str, Any] = {
        "manifest_version": 2,
        "id": f"tests.{path.name}",
        "version": "1.0.0",
        "name": path.name,
        "author": {"name": "tests"},
    }
    if network is not None:
        data["network"] = network
    path.mkdir(parents=True, exist_ok=True)
    return PluginSource(data["id"], path, parse_manifest(data))


def policy_of(
    tmp_path: Path,
    sources: list[PluginSource],
    endpoint: str = "ipc:///run/x.sock",
    report: SandboxReport | None = None,
    egress: str = "",
) -> tuple[dict[str, Any], tuple[str, ...]]:
    report = report or sandbox_report(SandboxSettings(), EVERYTHING)
    made = runner_policy(
        report,
        SandboxSettings(),
        sources,
        tmp_path / "data",
        tmp_path / "temp",
        endpoint,
        egress=egress,
    )
    assert made is not None
    return json.loads(made.policy), made.active


def test_a_plugin_without_network_gets_a_network_namespace_and_no_tcp_ports(
    tmp_path: Path,
) -> None:
    plugin = source(tmp_path / "plugins" / "quiet")

    policy, active = policy_of(tmp_path, [plugin])

    assert policy["network_namespace"] and "network_namespace" in active
    assert policy["connect_ports"] == [] and policy["bind_ports"] == []
    assert policy["read"] == []  # its folder is written through a copy-on-write view
    data, temp = tmp_path / "data" / plugin.plugin_id, tmp_path / "temp" / plugin.plugin_id
    assert policy["write"] == [str(data.resolve()), str(temp.resolve()), str(plugin.path)]
    assert data.is_dir() and temp.is_dir()  # made by the host: the runner could not


def test_a_plugin_asking_for_ports_keeps_a_namespace_of_its_own_and_its_gate_opens_them(
    tmp_path: Path,
) -> None:
    plugin = source(tmp_path / "fetcher", {"connect": [443, 80]})

    policy, active = policy_of(tmp_path, [plugin], egress="/run/x.egress")

    assert policy["network_namespace"] and "network_namespace" in active
    assert policy["connect_ports"] == [] and policy["bind_ports"] == []  # only the gate's
    assert policy["egress"] == "/run/x.egress" and not policy["listen"]
    ports = manifest_ports(SandboxSettings(), [plugin])
    assert ports.connects(443) and ports.connects(80) and not ports.connects(22)


def test_a_plugin_asking_to_listen_binds_through_its_gate(tmp_path: Path) -> None:
    plugin = source(tmp_path / "server", {"bind": [8080]})

    policy, _ = policy_of(tmp_path, [plugin], egress="/run/x.egress")

    assert policy["network_namespace"] and policy["listen"]
    assert manifest_ports(SandboxSettings(), [plugin]).bind == frozenset({8080})


def test_without_a_network_namespace_a_plugin_asking_for_ports_gets_landlock_ports(
    tmp_path: Path,
) -> None:
    plugin = source(tmp_path / "fetcher", {"connect": [443, 80]})
    no_netns = SandboxSupport(frozenset(PROTECTIONS) - {"network_namespace"}, {}, 7)
    report = sandbox_report(SandboxSettings(), no_netns)

    policy, active = policy_of(tmp_path, [plugin], report=report)

    assert not policy["network_namespace"] and "network_namespace" not in active
    assert policy["connect_ports"] == [443, 80] and policy["bind_ports"] == []


def test_an_operator_who_caps_manifests_keeps_a_plugin_asking_for_ports_offline(
    tmp_path: Path,
) -> None:
    plugin = source(tmp_path / "fetcher", {"connect": "any", "bind": [8080]})
    report = sandbox_report(SandboxSettings(), EVERYTHING)
    capped = SandboxSettings(manifest_network=False)

    made = runner_policy(report, capped, [plugin], tmp_path / "d", tmp_path / "t", "ipc:///x")

    assert made is not None
    policy = json.loads(made.policy)
    assert policy["network_namespace"] and "network_namespace" in made.active
    assert policy["connect_ports"] == [] and policy["bind_ports"] == []
    assert not manifest_ports(capped, [plugin])  # so its gate opens nothing either


def test_any_port_lets_the_gate_connect_on_every_port(tmp_path: Path) -> None:
    plugin = source(tmp_path / "crawler", {"connect": "any"})

    policy, _ = policy_of(tmp_path, [plugin])

    assert policy["connect_ports"] == []  # the namespace's own: the gate connects
    ports = manifest_ports(SandboxSettings(), [plugin])
    assert ports.connect is None and ports.connects(22) and ports.connects(65535)


def test_a_tcp_runner_may_reach_the_hosts_port_and_keeps_the_hosts_network(
    tmp_path: Path,
) -> None:
    policy, _ = policy_of(tmp_path, [source(tmp_path / "p")], endpoint="tcp://127.0.0.1:40123")

    assert not policy["network_namespace"]
    assert policy["connect_ports"] == [40123]


def test_without_user_namespaces_the_rest_still_applies(tmp_path: Path) -> None:
    report = sandbox_report(SandboxSettings(), NO_USERNS)

    policy, active = policy_of(tmp_path, [source(tmp_path / "p")], report=report)

    assert not policy["user_namespace"] and not policy["network_namespace"]
    assert policy["landlock"] and policy["seccomp"] and policy["no_new_privs"]
    assert report.missing["user_namespace"] == "max_user_namespaces is 0"
    assert "landlock" in active and "user_namespace" not in active


def test_the_pid_namespace_is_on_by_default_where_the_kernel_offers_it() -> None:
    default = sandbox_report(SandboxSettings(), EVERYTHING)
    without_userns = sandbox_report(SandboxSettings(), NO_USERNS)
    turned_off = sandbox_report(SandboxSettings(pid_namespace=False), EVERYTHING)

    assert "pid_namespace" in default.active
    assert "pid_namespace" not in without_userns.active
    assert "pid_namespace" in without_userns.missing  # said in the banner, not an error
    assert "pid_namespace" not in turned_off.active
    assert "runner.sandbox.pid_namespace = false" in turned_off.missing["pid_namespace"]


def test_requiring_a_pid_namespace_that_is_turned_off_refuses_to_start() -> None:
    settings = SandboxSettings(pid_namespace=False, require=["pid_namespace"])

    with pytest.raises(RunnerStartError, match="pid_namespace"):
        sandbox_report(settings, EVERYTHING)


def test_a_turned_off_sandbox_gives_runners_no_policy(tmp_path: Path) -> None:
    report = sandbox_report(SandboxSettings(enabled=False), EVERYTHING)

    made = runner_policy(
        report, SandboxSettings(), [source(tmp_path / "p")], tmp_path, tmp_path, "ipc://x"
    )

    assert made is None and report.active == ()
    assert report.describe().startswith("sandbox: off")


def test_a_required_protection_the_kernel_lacks_refuses_the_start() -> None:
    settings = SandboxSettings(require=["landlock", "user_namespace"])

    with pytest.raises(RunnerStartError, match="user_namespace: max_user_namespaces is 0"):
        sandbox_report(settings, NO_USERNS)


async def test_a_host_requiring_a_missing_protection_does_not_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def no_userns(**_: Any) -> SandboxSupport:
        return NO_USERNS

    monkeypatch.setattr("plughost.startup.probe_support", no_userns)
    settings = HostSettings(
        data_dir=tmp_path / "data",
        runner={"sandbox": {"require": ["user_namespace"]}},  # type: ignore[arg-type]
    )
    host = PluginHost([], settings=settings)

    with pytest.raises(RunnerStartError, match="required protections"):
        await host.start()
    await host.aclose()


@pytest.mark.parametrize(
    ("support", "sandbox", "level"),
    [
        (NO_USERNS, {}, logging.WARNING),  # the kernel withholds what was asked for
        (None, {"pid_namespace": False}, logging.INFO),  # the operator's own choice
        (None, {}, logging.INFO),
    ],
)
async def test_a_host_whose_runners_get_less_than_asked_says_so_as_a_warning(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    support: SandboxSupport | None,
    sandbox: dict[str, Any],
    level: int,
) -> None:
    async def probed(**_: Any) -> SandboxSupport:
        return support or EVERYTHING

    monkeypatch.setattr("plughost.startup.probe_support", probed)
    settings = HostSettings(data_dir=tmp_path / "data", runner={"sandbox": sandbox})
    host = PluginHost([], settings=settings)
    with caplog.at_level(logging.INFO, logger="plughost.startup"):
        await host.start()
    await host.aclose()

    [record] = [r for r in caplog.records if r.getMessage().startswith("sandbox:")]
    assert record.levelno == level


async def test_the_probe_finds_what_this_kernel_offers() -> None:
    support = await sandbox_module.probe_support(fresh=True)

    assert support.offered <= set(PROTECTIONS)
    assert set(support.offered).isdisjoint(support.reasons)


async def test_the_kernel_is_asked_once_per_environment_and_a_failed_probe_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs: list[str] = []
    real = sandbox_probe._probe

    async def counted(python: str, env: Any) -> SandboxSupport:
        runs.append(python)
        return await real(python, env)

    monkeypatch.setattr(sandbox_probe, "_probe", counted)
    env = runner_env(()) | {"PLUGHOST_TEST_PROBE": str(tmp_path)}  # a key no other test has

    first = await sandbox_probe.probe_support(env=env)
    again = await sandbox_probe.probe_support(env=env)
    assert len(runs) == 1
    assert again == first and not first.failure
    other = await sandbox_probe.probe_support(env=env | {"PLUGHOST_TEST_PROBE": "other"})
    assert len(runs) == 2 and other.offered == first.offered
    await sandbox_probe.probe_support(env=env, fresh=True)
    assert len(runs) == 3

    missing = str(tmp_path / "no-python")
    for _ in range(2):
        failed = await sandbox_probe.probe_support(python=missing, env=env)
        assert failed.failure
    assert runs[-2:] == [missing, missing]


async def test_a_probe_that_cannot_run_offers_nothing_and_says_why_for_each_protection(
    tmp_path: Path,
) -> None:
    support = await sandbox_module.probe_support(python=str(tmp_path / "no-python"))

    assert support.offered == frozenset()
    report = sandbox_report(SandboxSettings(), support)
    assert report.active == ()
    assert set(report.missing) == set(PROTECTIONS)
    assert all("the sandbox probe failed" in why for why in report.missing.values())


def test_a_plugins_folder_is_viewed_copy_on_write_with_its_changes_kept_beside_its_data(
    tmp_path: Path,
) -> None:
    plugin = source(tmp_path / "plugins" / "writer")

    policy, active = policy_of(tmp_path, [plugin])

    [(folder, upper, work)] = policy["overlays"]
    views = (tmp_path / "data" / ".folders" / "tests.writer").resolve()
    assert "folder_overlay" in active
    assert folder == str(plugin.path)
    assert Path(upper) == views / "upper" and Path(upper).is_dir()
    assert Path(work).parent == views and Path(work).is_dir()
    assert not Path(upper).is_relative_to(tmp_path / "data" / "tests.writer")


def test_without_a_user_namespace_a_plugins_folder_stays_read_only(tmp_path: Path) -> None:
    plugin = source(tmp_path / "plugins" / "writer")
    report = sandbox_report(SandboxSettings(), NO_USERNS)

    policy, active = policy_of(tmp_path, [plugin], report=report)

    assert policy["overlays"] == [] and "folder_overlay" not in active
    assert policy["read"] == [str(plugin.path)]
    assert str(plugin.path) not in policy["write"]
