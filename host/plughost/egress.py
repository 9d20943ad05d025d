"""A runner's one way out to the network: the host resolves, checks and connects for it.

A sandboxed runner has a network namespace of its own with nothing in it, so
no library setting, raw socket or subprocess can reach anything. Its plugins'
network grants (:mod:`plughost.destinations`) are served by an
:class:`EgressGate`: a Unix socket only that runner can reach, on which the
runner's socket layer (``plughost_runner.sandbox.egress``) asks two things:

``{"op": "resolve", "host": NAME}``
    The host resolves ``NAME`` itself and answers its addresses, less any a
    name may never lead to (the host's loopback, link-local and cloud
    metadata addresses), and remembers, for this runner, which names led to
    which address; a name no grant covers is refused here, before any DNS
    query leaves the host.
``{"op": "connect", "address": ADDR, "port": PORT}``
    The host checks the grants against the names this runner resolved to
    ``ADDR`` (an address no name led to needs an address grant of its own),
    opens a non-blocking TCP socket, starts connecting, and passes the socket
    itself back (``SCM_RIGHTS``). The plugin's library then
    completes the connect on a real TCP socket: TLS, keep-alive and timeouts
    work as they would anywhere, and no byte is copied through the host.

A runner whose manifests ask for TCP ports (``"network"``) asks through its
gate too, which then also opens connections on those ports and listening
sockets (``{"op": "listen", ...}``) on the host's network
(:mod:`plughost.egress_ports`).

Whatever the grants (a ``localhost:PORT`` of the console's port, an address
of this machine), the gate never connects to the services this process
serves (:mod:`plughost.own_services`: the console, MCP over HTTP): a plugin
that can reach the host's loopback is not an operator.

Each answer is one JSON line (``{"ok": true, ...}`` or ``{"ok": false,
"errno": N, "error": "..."}``). A refusal is counted, logged and emitted as a
``network.denied`` event naming the plugin, the destination and the grant
that would let it through. In learn mode (``plughost serve --learn``) the gate
lets every destination but the host's own through and records each one, so
an operator can paste the grants a plugin turned out to need.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import json
import logging
import os
import re
import socket
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from plughost.destinations import Grants, IPAddress, grant_for, reachable_by_name
from plughost.egress_ports import NO_PORTS, ManifestPorts
from plughost.events import EventBus, EventKind, LifecycleEvent
from plughost.own_services import OWN_SERVICES

__all__ = ["EgressGate"]

log = logging.getLogger(__name__)

_REQUEST_SECONDS = 5.0
_RESOLVE_SECONDS = 10.0
_REPEAT_SECONDS = 60.0  # a refused destination is reported again after this long
_MAX_ADDRESSES = 65536
_MAX_KEYS = 4096  # distinct refused destinations remembered (a plugin chooses them)
_MAX_OPEN = 64  # requests one runner may have open at once: the host's descriptors are shared
_NAME = re.compile(r"^[a-z0-9_-]+(\.[a-z0-9_-]+)*$")


class EgressGate:
    """Resolves and connects for one runner, within its plugins' grants."""

    def __init__(
        self,
        path: Path,
        grants: Grants,
        *,
        runner_id: str,
        plugin_ids: Sequence[str],
        events: EventBus | None = None,
        pinned: Mapping[str, str] | None = None,
        learn: bool = False,
        kind: str = "plugin",
        ports: ManifestPorts = NO_PORTS,
    ) -> None:
        self.path = path
        self.grants = grants
        self.ports = ports  # what the runner's manifests ask for, on the host's network
        self.learn = learn
        self._runner_id = runner_id
        self._plugin_ids = list(plugin_ids)
        self._kind = kind  # "plugin" or "MCP server": who asked, and where its grants live
        self._events = events
        self._pinned = {k.lower(): ipaddress.ip_address(v) for k, v in (pinned or {}).items()}
        self._names: dict[IPAddress, set[str]] = {}  # what each address was resolved from
        self._reported: dict[tuple[str, int], float] = {}
        self._server: asyncio.AbstractServer | None = None
        self._open = 0
        self.denied: Counter[str] = Counter()
        """Refusals by the grant that would have let them through."""
        self.used: Counter[str] = Counter()
        """Connections opened, by the grant that covers them (what learn mode prints)."""

    async def start(self) -> None:
        """Listen on :attr:`path` (owner only)."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self._server = await asyncio.start_unix_server(self._serve, str(self.path), limit=4096)
        self.path.chmod(0o600)

    async def aclose(self) -> None:
        """Stop answering; connections already handed over are the runner's own."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._open >= _MAX_OPEN:  # a runner flooding its gate waits for its own requests
            writer.close()
            return
        self._open += 1
        try:
            async with asyncio.timeout(_REQUEST_SECONDS):
                line = await reader.readline()
            reply, handed = await self._answer(_parse(line))
            _send(writer, reply, handed)
        except (OSError, TimeoutError, ValueError, asyncio.LimitOverrunError) as exc:
            log.debug("egress request from runner=%s dropped: %s", self._runner_id, exc)
        finally:
            self._open -= 1
            writer.close()

    async def _answer(self, request: dict[str, Any]) -> tuple[dict[str, Any], socket.socket | None]:
        if request.get("op") == "resolve":
            return await self._resolve(str(request.get("host", ""))), None
        if request.get("op") == "connect":
            port = request.get("port")
            if not isinstance(port, int) or not 0 < port < 65536:
                return _refusal(errno.EINVAL, "the port must be a number from 1 to 65535"), None
            return self._connect(str(request.get("address", "")), port)
        if request.get("op") == "listen":
            port = request.get("port")
            if not isinstance(port, int) or not 0 <= port < 65536:
                return _refusal(errno.EINVAL, "the port must be a number from 0 to 65535"), None
            return self.ports.listen(str(request.get("address", "")), port)
        return _refusal(errno.EINVAL, "unknown request"), None

    async def _resolve(self, name: str) -> dict[str, Any]:
        name = name.lower().rstrip(".")
        if not 0 < len(name) <= 253 or not _NAME.match(name):  # it reaches logs and events
            return _refusal(errno.EINVAL, "not a host name")
        anywhere = self.ports.connects_anywhere  # a manifest's ports: any name, any address
        if not self.learn and not anywhere and not self.grants.names(name):
            return self._deny(name, 0)
        found = await self._lookup(name)
        addresses = found if anywhere else [a for a in found if reachable_by_name(a)]
        if not addresses:
            return {"ok": False, "errno": -2, "error": f"{name}: the host could not resolve it"}
        if len(self._names) >= _MAX_ADDRESSES:
            self._names.clear()  # a plugin resolving without end: it resolves again
        for address in addresses:
            self._names.setdefault(address, set()).add(name)
        return {"ok": True, "addresses": [str(a) for a in addresses]}

    async def _lookup(self, name: str) -> list[IPAddress]:
        if name in self._pinned:
            return [self._pinned[name]]
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(_RESOLVE_SECONDS):
                found = await loop.getaddrinfo(name, None, type=socket.SOCK_STREAM)
        except (OSError, TimeoutError):
            return []
        return sorted({ipaddress.ip_address(f[4][0]) for f in found}, key=lambda a: a.version)

    def _connect(self, given: str, port: int) -> tuple[dict[str, Any], socket.socket | None]:
        try:
            address = ipaddress.ip_address(given)
        except ValueError:
            return _refusal(errno.EINVAL, f"{given!r} is not an address"), None
        own = OWN_SERVICES.at(address, port)
        if own is not None:  # whatever the grants: see plughost.own_services
            return self._refuse_own(own.name, address, port), None
        names = sorted(self._names.get(address, ()))
        if self.learn:
            allowed = not address.is_loopback and (not names or reachable_by_name(address))
            allowed = allowed or self.ports.connects(port)
            name = names[0] if names else ""
        else:
            name = next((n for n in names if self.grants.allows(n, port, address)), "")
            allowed = (
                bool(name) or self.grants.allows("", port, address) or self.ports.connects(port)
            )
        if not allowed:
            return self._deny(names[0] if names else str(address), port), None
        target = address
        family = socket.AF_INET if target.version == 4 else socket.AF_INET6
        connection = socket.socket(family, socket.SOCK_STREAM)
        connection.setblocking(False)
        code = connection.connect_ex((str(target), port))
        if code not in (0, errno.EINPROGRESS):
            connection.close()
            return _refusal(code, f"{name or target}:{port}: {os.strerror(code)}"), None
        used = grant_for(name or str(target), port)
        if used in self.used or len(self.used) < _MAX_KEYS:
            self.used[used] += 1
        return {"ok": True}, connection

    def _deny(self, host: str, port: int) -> dict[str, Any]:
        grant = grant_for(host, port or 443)
        self._count(grant)
        where = f"{host}:{port}" if port else host
        who = f"{self._kind} {', '.join(self._plugin_ids)}"
        fix = self._fix(grant)
        message = f"network: {who} was refused {where}: no network grant covers it; {fix}"
        self._report((host, port), message, {"destination": where, "grant": grant})
        return _refusal(errno.EACCES, f"plughost sandbox: {where} is not granted to {who}; {fix}")

    def _refuse_own(self, service: str, address: IPAddress, port: int) -> dict[str, Any]:
        """Refuse a connection to one of this host's own services; no grant opens it."""
        where = f"[{address}]:{port}" if address.version == 6 else f"{address}:{port}"
        reason = (
            f"{where} is plughost's own {service}, which no {self._kind} may reach whatever "
            "its grants (it would read every plugin's events, or act with the host's rights)"
        )
        self._count(f"(plughost's own {service})")
        who = f"{self._kind} {', '.join(self._plugin_ids)}"
        message = f"network: {who} was refused {reason}"
        self._report((str(address), port), message, {"destination": where, "service": service})
        return _refusal(errno.EACCES, f"plughost sandbox: {reason}")

    def _count(self, key: str) -> None:
        """Count a refusal under ``key`` (the grant that would allow it), within bounds."""
        if key in self.denied or len(self.denied) < _MAX_KEYS:
            self.denied[key] += 1
        else:
            self.denied["(other destinations)"] += 1

    def _report(self, key: tuple[str, int], message: str, details: dict[str, Any]) -> None:
        """Log and publish a refusal, once a minute per destination."""
        if len(self._reported) >= _MAX_KEYS:
            self._reported.clear()
        now = time.monotonic()
        if now - self._reported.get(key, -_REPEAT_SECONDS) < _REPEAT_SECONDS:
            return
        self._reported[key] = now
        log.warning("%s", message)
        if self._events is not None:
            self._events.emit(
                LifecycleEvent(
                    EventKind.NETWORK_DENIED,
                    message,
                    plugin_id=self._plugin_ids[0] if len(self._plugin_ids) == 1 else None,
                    runner_id=self._runner_id,
                    details={**details, "plugins": self._plugin_ids},
                )
            )

    def _fix(self, grant: str) -> str:
        first = self._plugin_ids[0] if self._plugin_ids else "<id>"
        if self._kind == "MCP server":
            return f'add "{grant}" to network in [mcp.servers.{first}]'
        current = [d.text for d in self.grants.destinations]
        wanted = json.dumps([*current, grant], ensure_ascii=False)
        return (
            f'set network_grants."{first}" = {wanted} in plughost.toml, or run: '
            f"plughost grant {first} {grant}"
        )


def _parse(line: bytes) -> dict[str, Any]:
    request = json.loads(line)
    if not isinstance(request, dict):
        raise ValueError("a request is a JSON object")
    return request


def _refusal(code: int, message: str) -> dict[str, Any]:
    return {"ok": False, "errno": code, "error": message}


def _send(
    writer: asyncio.StreamWriter, reply: dict[str, Any], handed: socket.socket | None
) -> None:
    """Send ``reply`` and, with it, ``handed`` (which this process then closes)."""
    data = json.dumps(reply).encode() + b"\n"
    transport_socket = writer.get_extra_info("socket")
    # The transport's own socket object refuses sendmsg: send on a duplicate of it.
    with socket.socket(fileno=os.dup(transport_socket.fileno())) as raw:
        if handed is None:
            raw.sendall(data)
            return
        try:
            socket.send_fds(raw, [data], [handed.fileno()])
        finally:
            handed.close()
