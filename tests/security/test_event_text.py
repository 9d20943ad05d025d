"""What a plugin ships cannot forge or hide lines of the operator's log (a real host).

A folder's name, a manifest's fields and an exception's text reach event
messages, which the operator reads in a terminal and in log files. Control
characters there could move the cursor, recolour or erase a line, or begin a
line that reads like another event.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from plughost.events import EventKind
from tests.conftest import HostFactory

FORGED = "plugin.loaded plugin tests.trusted 1.0.0 loaded"


async def test_a_folder_named_with_control_characters_cannot_forge_a_log_line(
    tmp_path: Path, make_host: HostFactory, caplog: pytest.LogCaptureFixture
) -> None:
    plugins = tmp_path / "plugins"
    folder = plugins / f"evil\r\x1b[2K\n{FORGED}\u202e"
    folder.mkdir(parents=True)
    (folder / "_manifest.json").write_text(json.dumps({"id": "tests.evil"}))  # incomplete
    (folder / "plugin.py").write_text("")
    caplog.set_level(logging.INFO, logger="plughost.events")

    async with make_host([plugins]) as host:
        failed = [e for e in host.events.history() if e.kind is EventKind.PLUGIN_FAILED]

    assert len(failed) == 1
    message = failed[0].message
    assert "evil" in message  # the folder is still named
    assert not any(char in message for char in "\r\x1b\u202e")
    assert "\\x1b[2K" in message and "\\u202e" in message  # shown, as escapes
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert not any(line.startswith(FORGED) for line in logged.splitlines())
    assert f"\n    {FORGED}" in logged
