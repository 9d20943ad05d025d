"""The deployment example of docs/deploy/, read as data for the tests in this folder.

The Dockerfiles (through :mod:`tests.deploy.dockerfiles`) and the Kubernetes
manifests, with the few lookups several tests share: a manifest by kind and
name, a container, a volume, what an image's ``pip install`` installs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.deploy.dockerfiles import Dockerfile, parse

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "docs" / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
RUNNER = parse(DEPLOY / "runner.Dockerfile")
RUNNER_PLUGINS = parse(DEPLOY / "runner-plugins.Dockerfile")
HOST = parse(DEPLOY / "host.Dockerfile")


def manifests() -> list[dict[str, Any]]:
    """Every object in the YAML files the kustomization lists, in its order."""
    kustomization = yaml.safe_load((KUBERNETES / "kustomization.yaml").read_text())
    objects: list[dict[str, Any]] = []
    for resource in kustomization["resources"]:
        text = (KUBERNETES / resource).read_text()
        objects += [o for o in yaml.safe_load_all(text) if o is not None]
    return objects


def manifest(kind: str, name: str) -> dict[str, Any]:
    """The one object of ``kind`` named ``name``."""
    found = [o for o in manifests() if o["kind"] == kind and o["metadata"]["name"] == name]
    if len(found) != 1:
        raise AssertionError(f"expected one {kind} {name}, found {len(found)}")
    return found[0]


def pod_spec(deployment: str) -> dict[str, Any]:
    spec: dict[str, Any] = manifest("Deployment", deployment)["spec"]["template"]["spec"]
    return spec


def container(deployment: str, name: str, init: bool = False) -> dict[str, Any]:
    key = "initContainers" if init else "containers"
    (found,) = [c for c in pod_spec(deployment)[key] if c["name"] == name]
    return dict(found)


def volume(deployment: str, name: str) -> dict[str, Any]:
    (found,) = [v for v in pod_spec(deployment)["volumes"] if v["name"] == name]
    return dict(found)


def mount_path(deployment: str, container_spec: dict[str, Any], path: str) -> tuple[str, str]:
    """The volume a path inside ``container_spec`` lies on, and the path within it."""
    best: tuple[str, str] | None = None
    for mount in container_spec.get("volumeMounts", []):
        root = mount["mountPath"].rstrip("/")
        inside = path == root or path.startswith(root + "/")
        if inside and (best is None or len(root) > len(best[1])):
            best = (mount["name"], root)
    if best is None:
        raise AssertionError(f"{path} is on no volume of {container_spec['name']} in {deployment}")
    return best[0], path[len(best[1]) :].lstrip("/")


def pip_targets(dockerfile: Dockerfile) -> list[str]:
    """What the ``pip install`` commands of an image install (paths and names, not options)."""
    targets: list[str] = []
    for stage in dockerfile.stages:
        for run in stage.all("RUN"):
            words = run.args
            for start in [i for i, w in enumerate(words) if w == "install" and i > 0]:
                if words[start - 1].endswith("pip"):
                    targets += _install_arguments(words[start + 1 :])
    return targets


def _install_arguments(words: list[str]) -> list[str]:
    found: list[str] = []
    skip = False
    for word in words:
        if word in {"&&", ";", "||"}:
            break
        if skip:
            skip = False
        elif word in {"--constraint", "-c", "-r", "--requirement"}:
            skip = True
        elif not word.startswith("-"):
            found.append(word)
    return found
