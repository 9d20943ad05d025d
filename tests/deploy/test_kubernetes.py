"""The Kubernetes example of docs/deploy/kubernetes/ holds together, read without a cluster.

Each test follows one thread through the files that must agree on it: the
Secret's key, its mount and the runner's ``--credentials``; the Service's port,
the container's port and ``[host.remote] listen``; the runner's ``--connect``
and the Service's name; labels and selectors; and the ConfigMap's TOML, which
the host's own loader must accept with every path on a volume that can hold it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from plughost.cli.serve_config import ServeConfig
from plughost.settings import RunnerSettings
from tests.deploy.example import (
    DEPLOY,
    HOST,
    KUBERNETES,
    RUNNER,
    container,
    manifest,
    manifests,
    mount_path,
    pod_spec,
    volume,
)

README = (DEPLOY / "README.md").read_text(encoding="utf-8")
CONFIG_MAP = manifest("ConfigMap", "plughost-host-config")


def _flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def _runner_command() -> list[str]:
    """The runner container's whole command line: the image's entrypoint, then the pod's args."""
    (entrypoint,) = RUNNER.final.all("ENTRYPOINT")
    return [*entrypoint.args, *container("plughost-runner", "runner")["args"]]


def _host_config(tmp_path: Path) -> tuple[ServeConfig, str]:
    """The ConfigMap's serve configuration as the host loads it, and its mounted path."""
    (entrypoint,) = HOST.final.all("ENTRYPOINT")
    config_path = _flag(entrypoint.args, "--config")
    host = container("plughost-host", "host")
    volume_name, key = mount_path("plughost-host", host, config_path)
    assert volume("plughost-host", volume_name)["configMap"]["name"] == "plughost-host-config"
    file = tmp_path / key
    file.write_text(CONFIG_MAP["data"][key])
    return ServeConfig.load(file), config_path


def _port(container_spec: dict[str, Any], name: str) -> int:
    (port,) = [p["containerPort"] for p in container_spec["ports"] if p["name"] == name]
    return int(port)


def test_the_secret_key_mounted_is_the_file_the_runner_reads() -> None:
    credentials = _flag(_runner_command(), "--credentials")
    runner = container("plughost-runner", "runner")
    volume_name, inside = mount_path("plughost-runner", runner, credentials)
    secret = volume("plughost-runner", volume_name)["secret"]
    (item,) = [i for i in secret["items"] if i["path"] == inside]
    # The README's command makes the Secret with exactly this name and key.
    assert (
        f"kubectl create secret generic {secret['secretName']} --from-file={item['key']}=" in README
    )
    mounts = [m for m in runner["volumeMounts"] if m["name"] == volume_name]
    assert all(m.get("readOnly") for m in mounts)


def test_the_credential_file_is_readable_by_the_runners_group_only() -> None:
    secret = volume("plughost-runner", "credentials")["secret"]
    assert secret["defaultMode"] == 0o440
    security = pod_spec("plughost-runner")["securityContext"]
    (user,) = RUNNER.final.all("USER")
    uid, gid = (int(n) for n in user.args[0].split(":"))
    assert (security["runAsUser"], security["runAsGroup"], security["fsGroup"]) == (uid, gid, gid)
    assert security["runAsNonRoot"] is True


def test_the_service_port_is_the_port_the_host_listens_on(tmp_path: Path) -> None:
    config, _ = _host_config(tmp_path)
    assert config.host.remote.listen is not None
    listen = urlsplit(config.host.remote.listen)
    host = container("plughost-host", "host")
    service = manifest("Service", "plughost-host")
    (remote,) = [p for p in service["spec"]["ports"] if p["name"] == "remote"]
    assert listen.hostname == "0.0.0.0"  # the Service reaches the pod on its own address
    assert remote["port"] == listen.port == _port(host, remote["targetPort"])
    (mcp,) = [p for p in service["spec"]["ports"] if p["name"] == "mcp"]
    assert config.serve.mcp == "http"
    assert config.serve.mcp_http == f"0.0.0.0:{_port(host, mcp['targetPort'])}"


def test_the_runners_connect_to_the_hosts_service() -> None:
    connect = urlsplit(_flag(_runner_command(), "--connect"))
    service = manifest("Service", "plughost-host")
    (remote,) = [p for p in service["spec"]["ports"] if p["name"] == "remote"]
    assert connect.scheme == "tcp"
    assert connect.hostname is not None
    assert connect.hostname.split(".")[0] == service["metadata"]["name"]
    assert connect.port == remote["port"]
    # The README issues the credential with the same endpoint.
    assert f"--endpoint {connect.geturl()}" in README


def test_selectors_match_their_own_pods_and_no_other() -> None:
    templates = {
        o["metadata"]["name"]: o["spec"]["template"]["metadata"]["labels"]
        for o in manifests()
        if o["kind"] == "Deployment"
    }
    for name, labels in templates.items():
        selector = manifest("Deployment", name)["spec"]["selector"]["matchLabels"]
        assert selector.items() <= labels.items(), name
        others = [n for n, other in templates.items() if n != name]
        assert not [n for n in others if selector.items() <= templates[n].items()], name
    service = manifest("Service", "plughost-host")["spec"]["selector"]
    assert [n for n, labels in templates.items() if service.items() <= labels.items()] == [
        "plughost-host"
    ]


def test_the_configmap_is_accepted_by_the_hosts_loader_with_paths_on_volumes(
    tmp_path: Path,
) -> None:
    config, config_path = _host_config(tmp_path)
    host = container("plughost-host", "host")
    writable = {m["name"] for m in host["volumeMounts"] if not m.get("readOnly")}

    keys_volume, _ = mount_path("plughost-host", host, str(config.host.remote.keys_dir))
    assert "persistentVolumeClaim" in volume("plughost-host", keys_volume)
    for path in (config.host.remote.keys_dir, config.host.data_dir, config.host.temp_dir):
        assert mount_path("plughost-host", host, str(path))[0] in writable, path
    assert str(config.host.remote.keys_dir).startswith("/var/lib/plughost/")
    assert config_path == "/etc/plughost/plughost.toml"
    assert config.host.web.address is not None and config.host.web.address.startswith("127.")


def test_the_mcp_token_reaches_the_host_as_its_own_0600_file(tmp_path: Path) -> None:
    config, _ = _host_config(tmp_path)
    token = str(config.serve.mcp_token_file)
    init = container("plughost-host", "mcp-token", init=True)
    command = init["command"]
    assert command[:3] == ["install", "-m", "0600"]
    source, target = command[3], command[4]
    assert target == token
    secret_volume, key = mount_path("plughost-host", init, source)
    secret = volume("plughost-host", secret_volume)["secret"]
    assert [i["key"] for i in secret["items"] if i["path"] == key] == ["mcp-token"]
    assert f"kubectl create secret generic {secret['secretName']} --from-file=mcp-token=" in README
    # The copy lands on a memory volume the host container mounts at the same place.
    host = container("plughost-host", "host")
    copied = mount_path("plughost-host", init, target)[0]
    assert mount_path("plughost-host", host, token)[0] == copied
    assert volume("plughost-host", copied)["emptyDir"]["medium"] == "Memory"


def test_every_container_has_requests_limits_and_no_privileges() -> None:
    for deployment in ("plughost-host", "plughost-runner"):
        spec = pod_spec(deployment)
        for spec_container in [*spec.get("initContainers", []), *spec["containers"]]:
            resources = spec_container["resources"]
            assert {"cpu", "memory"} <= resources["requests"].keys(), spec_container["name"]
            assert "memory" in resources["limits"], spec_container["name"]
            security = spec_container["securityContext"]
            assert security["allowPrivilegeEscalation"] is False
            assert security["readOnlyRootFilesystem"] is True
            assert security["capabilities"]["drop"] == ["ALL"]


def test_the_host_is_probed_on_its_runner_port_and_replaced_not_doubled() -> None:
    host = container("plughost-host", "host")
    for probe in ("readinessProbe", "livenessProbe"):
        assert host[probe]["tcpSocket"]["port"] == "remote"
    deployment = manifest("Deployment", "plughost-host")["spec"]
    assert deployment["replicas"] == 1 and deployment["strategy"]["type"] == "Recreate"
    runners = manifest("Deployment", "plughost-runner")["spec"]["strategy"]
    assert runners["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}


def test_the_images_are_the_ones_the_dockerfiles_build() -> None:
    built = set()
    for dockerfile in DEPLOY.glob("*.Dockerfile"):
        built |= set(re.findall(r"docker build -f \S+ -t (\S+) \.", dockerfile.read_text()))
    used = {
        c["image"]
        for o in manifests()
        if o["kind"] == "Deployment"
        for c in [
            *o["spec"]["template"]["spec"].get("initContainers", []),
            *o["spec"]["template"]["spec"]["containers"],
        ]
    }
    assert used <= built, used - built


def test_kubectl_builds_the_kustomization() -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("no kubectl on PATH to run `kubectl kustomize`")
    built = subprocess.run(
        [kubectl, "kustomize", str(KUBERNETES)], capture_output=True, text=True, timeout=60
    )
    assert built.returncode == 0, built.stderr
    kinds = re.findall(r"^kind: (\w+)$", built.stdout, flags=re.MULTILINE)
    assert sorted(kinds) == [
        "ConfigMap",
        "Deployment",
        "Deployment",
        "PersistentVolumeClaim",
        "Service",
    ]


def _anchors(markdown: str) -> set[str]:
    """GitHub's anchors for the headings of ``markdown``."""
    headings = re.findall(r"^#+ (.+)$", markdown, flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_the_readmes_links_resolve_and_the_guides_link_to_it() -> None:
    for target in re.findall(r"\]\(([^)#]+)(?:#([^)]+))?\)", README):
        path, anchor = target
        linked = (DEPLOY / path).resolve()
        assert linked.exists(), path
        if anchor:
            assert anchor in _anchors(linked.read_text()), f"{path}#{anchor}"
    for anchor in re.findall(r"\]\(#([^)]+)\)", README):
        assert anchor in _anchors(README), anchor
    root = DEPLOY.parents[1]
    assert "(docs/deploy/README.md)" in (root / "README.md").read_text()
    operators = (root / "docs" / "operators.md").read_text()
    assert "(deploy/README.md)" in operators
    assert "containers-and-kubernetes" in _anchors(operators)


def test_the_readmes_timings_are_the_examples_and_the_defaults() -> None:
    runner = RunnerSettings()
    window = runner.heartbeat_interval * runner.heartbeat_misses
    assert f"`heartbeat_interval * heartbeat_misses`, {window:g} s by default" in README
    grace = pod_spec("plughost-host")["terminationGracePeriodSeconds"]
    assert runner.shutdown_drain < grace
    assert f"`terminationGracePeriodSeconds: {grace}`" in README
    ready = manifest("Deployment", "plughost-runner")["spec"]["minReadySeconds"]
    assert f"`minReadySeconds: {ready}`" in README


def test_a_runner_pod_drains_within_its_grace_period_as_the_readme_says() -> None:
    from plughost_runner.remote.leaving import DEFAULT_DRAIN_TIMEOUT

    args = container("plughost-runner", "runner")["args"]
    drain = float(_flag(args, "--drain-timeout"))
    grace = pod_spec("plughost-runner")["terminationGracePeriodSeconds"]
    # Kubernetes' default grace, and the runner's default drain with time to exit after it.
    assert grace == 30 and drain == DEFAULT_DRAIN_TIMEOUT
    assert drain + 5 <= grace
    assert f"`--drain-timeout` ({drain:g} s by default" in README
    assert f"`terminationGracePeriodSeconds: {grace}`" in README
    assert "SIGTERM" in README and "no call fails" in README


def test_the_docker_run_of_the_host_mounts_what_its_configuration_names(tmp_path: Path) -> None:
    config, config_path = _host_config(tmp_path)
    (command,) = re.findall(r"docker run [^`]+?plughost-host:\S+", README)
    mounts = dict(re.findall(r'-v "?([^:"\s]+):([^:"\s]+)(?::ro)?"?', command))
    assert config_path in mounts.values()
    assert str(config.serve.mcp_token_file) in mounts.values()
    assert str(config.host.remote.keys_dir).startswith(mounts["plughost-data"] + "/")
    (volume,) = HOST.final.all("VOLUME")
    assert volume.args == [mounts["plughost-data"]]
    listen = urlsplit(str(config.host.remote.listen))
    assert f"-p {listen.port}:{listen.port}" in command
    assert "--tmpfs /tmp" in command and str(config.host.temp_dir).startswith("/tmp/")
