"""CurveZMQ for runners reached over ``tcp://``: encryption and authentication by key.

Over ``ipc://`` the socket file sits in a directory only the host's user can
enter, so the kernel keeps strangers out. A TCP port has no such guard, so TCP
runners use CurveZMQ: the host has a server key pair (written with mode 0600
into its private directory), each runner spawn gets its own client key pair
through its credentials pipe (``spawn.credentials_pipe``), and a ZAP handler
admits only client keys the host issued for runners it is currently starting
or serving. A peer without the
server's public key cannot even complete the handshake; one with a key the
host did not issue is refused before any frame reaches the host.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zmq
import zmq.asyncio
from zmq.auth.asyncio import AsyncioAuthenticator

__all__ = ["ClientKeys", "CurveAuthority"]

log = logging.getLogger(__name__)

ZAP_DOMAIN = b"plughost"


@dataclass(frozen=True, slots=True)
class ClientKeys:
    """One runner spawn's key pair (Z85 text)."""

    public: bytes
    secret: bytes


class CurveAuthority:
    """Holds the server keys, issues runner keys, and answers ZAP for the host's sockets."""

    def __init__(self, context: zmq.asyncio.Context, key_dir: Path) -> None:
        self.server_public, self.server_secret = zmq.curve_keypair()
        _write_private(key_dir / "server.key", self.server_public)
        _write_private(key_dir / "server.key_secret", self.server_secret)
        self._allowed: set[bytes] = set()
        self._auth = AsyncioAuthenticator(context, log=log)
        self._auth.start()
        self._auth.configure_curve_callback(domain=ZAP_DOMAIN.decode(), credentials_provider=self)

    def issue(self) -> ClientKeys:
        """A fresh key pair for one runner spawn, admitted until :meth:`revoke`."""
        public, secret = zmq.curve_keypair()
        self._allowed.add(public)
        return ClientKeys(public, secret)

    def revoke(self, keys: ClientKeys) -> None:
        """Stop admitting ``keys`` (the runner it was issued to is gone)."""
        self._allowed.discard(keys.public)

    def callback(self, domain: str, key: bytes) -> bool:
        """ZAP: admit a client only with a key (Z85) this host issued and has not revoked."""
        admitted = key in self._allowed
        if not admitted:
            log.warning("refused a CURVE client with a key this host did not issue")
        return admitted

    def secure_server(self, sock: Any) -> None:
        """Make ``sock`` (before bind) a CURVE server that asks this authority about clients."""
        sock.setsockopt(zmq.ZAP_DOMAIN, ZAP_DOMAIN)
        sock.setsockopt(zmq.CURVE_SERVER, 1)
        sock.setsockopt(zmq.CURVE_SECRETKEY, self.server_secret)
        sock.setsockopt(zmq.CURVE_PUBLICKEY, self.server_public)

    def credentials(self, keys: ClientKeys) -> tuple[str, str, str]:
        """What a runner needs to connect: server public key, its public and secret keys."""
        return (self.server_public.decode(), keys.public.decode(), keys.secret.decode())

    def stop(self) -> None:
        """Stop answering ZAP requests."""
        self._auth.stop()


def _write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` readable by the owner only, from the first byte."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
