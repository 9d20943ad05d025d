"""A real ``plughost serve`` process on ports of its own, and its JSON log read as it comes.

Every test that runs serve asks for port 0 (``--mcp-http 127.0.0.1:0``,
``--web 127.0.0.1:0``) and reads the address serve announces, so no test
depends on a default port being free and tests in parallel never take one
another's port.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

PLUGHOST = [sys.executable, "-m", "plughost"]

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "plughost-tests", "version": "1"},
    },
}
"""A handshake-era client's first request, as a raw JSON-RPC message."""


class JsonLog:
    """The lines of a process's ``--log-format json`` stream, read by a thread as they come."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self._fresh: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._fresh.put(line)
        self._fresh.put(None)  # the end of the stream: the process closed it or exited

    def wait_for(
        self, match: Callable[[dict[str, Any]], bool], *, timeout: float, what: str
    ) -> dict[str, Any]:
        """The first JSON line that ``match`` accepts; fail on a deadline or the stream's end."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._fresh.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"{what} not printed within {timeout} s") from None
            if line is None:
                self._fresh.put(None)
                raise AssertionError(f"{what} not printed before the output ended")
            self.lines.append(line)
            with contextlib.suppress(ValueError):
                parsed = json.loads(line)
                if isinstance(parsed, dict) and match(parsed):
                    return parsed

    def event(self, name: str, *, timeout: float = 60) -> dict[str, Any]:
        """The first line of event ``name`` (``serve.mcp_http``, ``web.started``, ...)."""
        return self.wait_for(lambda line: line.get("event") == name, timeout=timeout, what=name)

    def finish(self, timeout: float = 30) -> str:
        """Every line, once the stream has ended (the process has exited)."""
        self._reader.join(timeout)
        while not self._fresh.empty():
            line = self._fresh.get_nowait()
            if line is not None:
                self.lines.append(line)
        self._fresh.put(None)
        return "".join(self.lines)


@contextlib.contextmanager
def serving(*args: str, cwd: Path) -> Iterator[tuple[subprocess.Popen[str], JsonLog]]:
    """Run ``plughost serve --log-format json ARGS`` in ``cwd``; yield it and its log.

    Ended afterwards (SIGTERM, then SIGKILL) if the test has not ended it, its
    pipe closed either way. ``cwd`` makes its default data directory the test's own.
    """
    command = [*PLUGHOST, "serve", "--log-format", "json", *args]
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=cwd
    )
    assert process.stderr is not None
    log = JsonLog(process.stderr)
    try:
        yield process, log
    finally:
        if process.poll() is None:
            process.terminate()
        try:
            process.wait(30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(10)
            log.finish()
            process.stderr.close()


@contextlib.contextmanager
def serve_over_pipes(config: Path, log: Path, cwd: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``plughost serve --no-watch --mcp-stdio --config CONFIG`` as an MCP client does.

    Its stdin and stdout are pipes of the caller's; its stderr goes to ``log``.
    Afterwards its stdin is closed, which ends it (killed if it is still there
    30 s later).
    """
    argv = [*PLUGHOST, "serve", "--no-watch", "--mcp-stdio", "--config", str(config)]
    with log.open("w") as errors:
        process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, cwd=cwd
        )
    assert process.stdin is not None and process.stdout is not None
    try:
        yield process
    finally:
        process.stdin.close()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()


@dataclass(frozen=True, slots=True)
class Served:
    """A running ``plughost serve --mcp-http``: where it answers, and how to reach it."""

    url: str
    token: str
    process: subprocess.Popen[str]
    log: JsonLog


@contextlib.contextmanager
def serve_mcp_http(token_file: Path, *args: str, cwd: Path | None = None) -> Iterator[Served]:
    """Run ``plughost serve ARGS --mcp-http 127.0.0.1:0`` until the block ends.

    In ``cwd``, by default the token file's folder.
    """
    address = ["--mcp-http", "127.0.0.1:0", "--mcp-token-file", str(token_file)]
    with serving(*args, *address, cwd=cwd or token_file.parent) as (process, log):
        url = log.event("serve.mcp_http")["url"]
        yield Served(url, token_file.read_text().strip(), process, log)
