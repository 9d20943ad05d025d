"""``plughost serve --web``: an address the console refuses stops serve before plugins start."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import EXAMPLES


def _serve(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "plughost", "serve", "--plugins", str(EXAMPLES), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=cwd, check=False)


def test_a_non_loopback_console_address_stops_serve_before_any_plugin_starts(
    tmp_path: Path,
) -> None:
    result = _serve("--web", "0.0.0.0:0", cwd=tmp_path)

    assert result.returncode == 1
    assert "not a loopback address" in result.stderr
    assert "plugin(s) loaded" not in result.stderr
