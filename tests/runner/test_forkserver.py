"""The fork server imports, before it forks, what runners would otherwise each import."""

from __future__ import annotations

import subprocess
import sys


def test_the_fork_server_imports_the_maibot_layer_before_it_forks() -> None:
    # Imported once there, its pages are shared by every forked runner instead of
    # copied into each runner that loads a MaiBot plugin.
    code = (
        "import sys, plughost_runner.forkserver\n"
        "print(sorted(m for m in ('plughost_sdk.maibot.plugin', 'plughost_runner.maibot.loader',"
        " 'tomlkit') if m in sys.modules))"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )

    expected = ["plughost_runner.maibot.loader", "plughost_sdk.maibot.plugin", "tomlkit"]
    assert found.stdout.strip() == str(expected)
