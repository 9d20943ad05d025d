"""What an upstream stdio server writes to stderr reaches serve's log only as the server's.

A real ``plughost serve --mcp-stdio`` starts ``tests/mcp_servers/loud_stderr_server.py``,
which writes a line forged to read as serve's own, terminal escapes and, when
asked, a flood of lines, before it serves. Serve's log (its stderr, as an operator's
terminal or a log collector gets it) must show each line tagged with the server's
name, its escapes written out, the flood cut to the allowance with one line
counting the rest, and, with ``--log-format json``, nothing but JSON lines; a
server started early (:mod:`plughost.mcp.early_launch`) and adopted is read the
same way.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from plughost.mcp.server_stderr import WINDOW_LINES
from tests.mcp_servers.harness import HERE
from tests.mcp_servers.loud_stderr_server import ESCAPES, FORGED

UPSTREAM = HERE / "loud_stderr_server.py"
TAG = "plughost.mcp.server_stderr: server=loud: "
FLOOD = 20_000
KEY = "sk-loud-9f8e7d6c5b4a3210"
"""The server's key, given it in the configuration's ``env``: it prints it, serve must not."""


async def _serve_once(tmp_path: Path, flood: int, *options: str) -> str:
    """Run serve over the loud server, call its tool once, and return serve's whole stderr."""
    config = tmp_path / "plughost.toml"
    config.write_text(
        f"[host]\ndata_dir = {json.dumps(str(tmp_path / 'data' / 'plugins'))}\n"
        f"[mcp.servers.loud]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(UPSTREAM))}]\n"
        f'env = {{ FLOOD = "{flood}", LOUD_API_KEY = "{KEY}" }}\n'
        # BM25 alone: an embedding model loading in a worker thread would hold serve's
        # exit until it had loaded, and nothing here ranks a search.
        '[search]\nsemantic = "off"\n'
    )
    args = ["-m", "plughost", "serve", "--no-watch", "--config", str(config), "--mcp-stdio"]
    target = StdioServerParameters(command=sys.executable, args=[*args, *options], cwd=tmp_path)
    log = tmp_path / "serve.log"
    with log.open("w") as errlog:
        async with Client(stdio_client(target, errlog=errlog), mode="legacy") as client:
            result = await client.call_tool("mcp_loud_ping", {})
            assert not result.is_error, result
    return log.read_text(encoding="utf-8", errors="surrogateescape")


async def test_a_forged_line_escapes_and_a_flood_reach_the_log_only_as_the_servers(
    tmp_path: Path,
) -> None:
    text = await _serve_once(tmp_path, FLOOD)
    lines = text.splitlines()

    forged = [line for line in lines if FORGED in line]
    assert forged and all(TAG + FORGED in line for line in forged), forged
    assert not any(line.startswith(FORGED[:8]) for line in lines)  # never a line of its own
    for raw in ("\x1b", "\r", "\u202e"):
        assert raw not in text, f"{raw!r} reached the log raw"
    assert any(TAG + r"\x1b[2J\x1b[31mred\x1b[0m\x0dover\u202eevil" in line for line in lines)
    assert ESCAPES not in text
    assert KEY not in text  # the configuration gave it to the server, not to the log

    logged = [line for line in lines if TAG + "flood " in line]
    counted = re.finditer(r"server=loud: (\d+) lines of its stderr dropped", text)
    drops = [int(match[1]) for match in counted]
    assert drops, "the flood's drops were not counted"
    written = FLOOD + 4  # the forged line, the escapes, the flood, the key and the ready line
    shown = (FORGED, "\\x1b[2J", "my key is [redacted]", "loud server ready")
    others = sum(TAG + what in text for what in shown)
    assert len(logged) + others + sum(drops) == written
    assert len(logged) + others <= WINDOW_LINES * len(drops)


async def test_with_json_logs_each_stderr_line_is_a_json_record_of_the_server_started_or_adopted(
    tmp_path: Path,
) -> None:
    for run in ("started", "adopted"):
        text = await _serve_once(tmp_path, 0, "--log-format", "json")
        records: list[dict[str, Any]] = [json.loads(line) for line in text.splitlines() if line]
        adopted = any("started early adopted server=loud" in r.get("message", "") for r in records)
        assert adopted == (run == "adopted"), run
        ours = [r for r in records if r.get("logger") == "plughost.mcp.server_stderr"]
        messages = [r["message"] for r in ours]
        assert "server=loud: " + FORGED in messages, (run, messages)
        assert "server=loud: " + ESCAPES.replace("\x1b", r"\x1b") not in messages
        assert any(m.startswith(r"server=loud: \x1b[2J") for m in messages), messages
        assert not any(FORGED in r.get("message", "") for r in records if r not in ours)
        assert "server=loud: my key is [redacted]" in messages, (run, messages)
        assert KEY not in text, run
