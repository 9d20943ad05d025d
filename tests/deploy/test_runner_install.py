"""The runner image's install, reproduced in a fresh virtual environment.

What ``runner.Dockerfile`` runs (``pip install --constraint constraints.txt
./sdk ./runner``), here without Docker: the runner's console script must work
and the host distribution must be absent, so a runner machine never needs it.
pip's cache is warm and PyPI reachable on the machines the suite runs on; the
new environment has no pip of its own (the project's pip installs into it),
which keeps this near 20 s on a loaded machine.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.deploy.example import ROOT, RUNNER, pip_targets


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_runner_images_install_gives_the_runner_and_not_the_host(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"]
    install += ["--disable-pip-version-check", "--constraint", "constraints.txt"]
    subprocess.run([*install, *pip_targets(RUNNER)], cwd=ROOT, check=True, timeout=240)

    helped = subprocess.run(
        [str(venv / "bin" / "plughost-runner"), "--help"], capture_output=True, text=True
    )
    assert helped.returncode == 0, helped.stderr
    assert "--connect" in helped.stdout and "--credentials" in helped.stdout

    host = subprocess.run([str(python), "-c", "import plughost"], capture_output=True, text=True)
    assert host.returncode == 1 and "No module named 'plughost'" in host.stderr
    listed = subprocess.run([str(python), "-m", "pip", "--version"], capture_output=True)
    assert listed.returncode != 0  # no pip inside: the listing below is the project's pip's
    names = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "list", "--format=freeze"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    installed = {line.split("==")[0].lower() for line in names.split()}
    assert {"plughost-runner", "plughost-sdk"} <= installed
    assert "plughost" not in installed and "mcp" not in installed, installed
