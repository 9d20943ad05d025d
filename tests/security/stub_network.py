"""Stub servers on hosts of the tests' own: a network namespace behind a veth pair.

The sandbox's network tests need destinations that are not the host's
loopback (which no name may lead to) and not the internet (which tests never
reach). :func:`stub_network` makes a network namespace with two addresses,
``granted`` and ``other``, each serving a small HTTP answer on ports 80 and
8080 that names the address it was reached on; the host reaches them through
a veth pair. It needs root and iproute2; without them the tests that use it
skip and say so.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

STUB = """
import asyncio, json, sys

async def answer(reader, writer):
    request = await reader.read(65536)
    local = writer.get_extra_info("sockname")
    body = json.dumps({"server": local[0], "port": local[1], "request": request.decode()[:200]})
    writer.write(("HTTP/1.0 200 OK\\r\\nContent-Type: application/json\\r\\nContent-Length: %d"
                  "\\r\\n\\r\\n%s" % (len(body), body)).encode())
    await writer.drain()
    writer.close()

async def main():
    servers = [await asyncio.start_server(answer, host, port)
               for host in sys.argv[1:] for port in (80, 8080)]
    print("ready", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))

asyncio.run(main())
"""


@dataclass(frozen=True)
class StubNetwork:
    """Two stub hosts: ``granted`` and ``other`` (addresses), both on ports 80 and 8080."""

    granted: str
    other: str


@contextmanager
def stub_network() -> Iterator[StubNetwork]:
    """Make the namespace and its servers; remove everything afterwards."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("stub hosts need root and iproute2 (ip netns, veth)")
    tag = secrets.token_hex(3)
    namespace, outside, inside = f"phstub-{tag}", f"phs{tag}a", f"phs{tag}b"
    octet = 16 + secrets.randbelow(200)
    host, granted, other = (f"10.253.{octet}.{n}" for n in (1, 2, 3))
    commands = [
        ["ip", "netns", "add", namespace],
        ["ip", "link", "add", outside, "type", "veth", "peer", "name", inside],
        ["ip", "link", "set", inside, "netns", namespace],
        ["ip", "addr", "add", f"{host}/29", "dev", outside],
        ["ip", "link", "set", outside, "up"],
        ["ip", "-n", namespace, "addr", "add", f"{granted}/29", "dev", inside],
        ["ip", "-n", namespace, "addr", "add", f"{other}/29", "dev", inside],
        ["ip", "-n", namespace, "link", "set", inside, "up"],
        ["ip", "-n", namespace, "link", "set", "lo", "up"],
    ]
    server: subprocess.Popen[str] | None = None
    try:
        for command in commands:
            made = subprocess.run(command, capture_output=True, text=True, check=False)
            if made.returncode:
                pytest.skip(f"cannot make stub hosts: {' '.join(command)}: {made.stderr.strip()}")
        server = subprocess.Popen(
            ["ip", "netns", "exec", namespace, sys.executable, "-c", STUB, granted, other],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert server.stdout is not None
        assert server.stdout.readline().strip() == "ready", "the stub servers did not start"
        yield StubNetwork(granted, other)
    finally:
        if server is not None:
            server.kill()
            server.wait()
            if server.stdout is not None:
                server.stdout.close()
        subprocess.run(["ip", "link", "del", outside], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "del", namespace], capture_output=True, check=False)
