"""Build the images of docs/deploy/ for real, where a Docker engine answers.

Skipped, saying why, on machines with no engine (the docker client alone is not
enough). The files are checked without Docker in ``test_dockerfiles.py``.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.deploy.example import DEPLOY, ROOT


def _engine() -> str:
    """Why no image can be built here; empty when an engine answers."""
    if shutil.which("docker") is None:
        return "no docker client on PATH"
    try:
        info = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return "docker info did not answer within 20 s"
    if info.returncode != 0:
        return (info.stderr.strip().splitlines() or ["docker info failed"])[-1]
    return ""


def _build(dockerfile: str, tag: str) -> None:
    subprocess.run(
        ["docker", "build", "-f", str(DEPLOY / dockerfile), "-t", tag, str(ROOT)],
        check=True,
        timeout=1200,
    )


def _run(tag: str, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", "run", "--rm", "--entrypoint", command[0], tag, *command[1:]],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_images_build_and_the_runner_image_has_no_host() -> None:
    reason = _engine()
    if reason:
        pytest.skip(f"no Docker engine: {reason}")
    _build("runner.Dockerfile", "plughost-runner:0.1.0")
    _build("runner-plugins.Dockerfile", "plughost-runner-plugins:0.1.0")
    _build("host.Dockerfile", "plughost-host:0.1.0")

    assert _run("plughost-runner:0.1.0", "plughost-runner", "--help").returncode == 0
    host = _run("plughost-runner:0.1.0", "python", "-c", "import plughost")
    assert host.returncode == 1 and "No module named 'plughost'" in host.stderr
    assert _run("plughost-runner:0.1.0", "id", "-u").stdout.strip() == "10001"
    listed = _run("plughost-runner-plugins:0.1.0", "ls", "/plugins").stdout.split()
    assert listed == ["image_tools", "unit_converter"]
    assert _run("plughost-host:0.1.0", "plughost", "--help").returncode == 0
