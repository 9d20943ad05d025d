"""Credentials of remote runners: the host's key pair, and per credential a key and allow-list.

Everything lives in ``[host.remote] keys_dir`` (mode 0700): ``server.key`` and
``server.key_secret`` (the host's CurveZMQ pair, made once), and one
``clients/<name>.json`` per credential with the runner's public key and the
plugins it may serve. The runner's secret key is written only to the file
handed to the operator (mode 0600), never kept by the host.

The host reads ``clients/`` when a runner authenticates and again every second
while runners are connected, so ``plughost runner-credentials revoke`` (which
deletes the file) takes effect at once, also for a host already running.

An allow-list entry is ``ID`` (any version) or ``ID==VERSION``; what a runner
offers beyond its allow-list is refused, whatever it says about it.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zmq

__all__ = ["AllowEntry", "ClientCredential", "RemoteKeyStore"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True, slots=True)
class AllowEntry:
    """One plugin a credential may serve: an id and, optionally, its exact version."""

    plugin_id: str
    version: str = ""

    @classmethod
    def parse(cls, text: str) -> AllowEntry:
        """``ID`` or ``ID==VERSION``."""
        plugin_id, _, version = text.partition("==")
        if not plugin_id.strip():
            raise ValueError(f"{text!r}: expected a plugin id, optionally ==VERSION")
        return cls(plugin_id.strip(), version.strip())

    def __str__(self) -> str:
        return f"{self.plugin_id}=={self.version}" if self.version else self.plugin_id


@dataclass(frozen=True, slots=True)
class ClientCredential:
    """What the host knows of one issued credential."""

    name: str
    public: bytes
    allow: tuple[AllowEntry, ...]

    def refusal(self, plugin_id: str, version: str) -> str | None:
        """Why this credential may not serve ``plugin_id`` at ``version``; None if it may."""
        entries = [e for e in self.allow if e.plugin_id == plugin_id]
        if not entries:
            return f"plugin {plugin_id} is not on the allow-list of credential {self.name}"
        if all(e.version and e.version != version for e in entries):
            wanted = ", ".join(e.version for e in entries)
            return (
                f"plugin {plugin_id} {version} is not allowed for credential {self.name} "
                f"(allowed versions: {wanted})"
            )
        return None


class RemoteKeyStore:
    """The files under ``keys_dir``."""

    def __init__(self, keys_dir: Path) -> None:
        self.keys_dir = keys_dir
        self._clients = keys_dir / "clients"

    def server_keys(self) -> tuple[bytes, bytes]:
        """The host's (public, secret) key pair (Z85), made on first use."""
        public_file = self.keys_dir / "server.key"
        secret_file = self.keys_dir / "server.key_secret"
        if not (public_file.exists() and secret_file.exists()):
            self._clients.mkdir(parents=True, exist_ok=True)
            self.keys_dir.chmod(0o700)
            public, secret = zmq.curve_keypair()
            _write_private(secret_file, secret)
            _write_private(public_file, public)
        return public_file.read_bytes().strip(), secret_file.read_bytes().strip()

    def issue(self, name: str, allow: list[AllowEntry], endpoint: str) -> dict[str, Any]:
        """Make a credential; return the runner's file content (its secret key included).

        Raises:
            ValueError: a bad name, an empty allow-list, or a credential of that name exists.
        """
        if not _NAME.match(name):
            raise ValueError(f"{name!r}: a credential name is letters, digits, '_', '.', '-'")
        if not allow:
            raise ValueError("a credential needs at least one --plugin")
        server_public, _ = self.server_keys()
        path = self._clients / f"{name}.json"
        if path.exists():
            raise ValueError(f"credential {name} exists; revoke it first to issue a new one")
        public, secret = zmq.curve_keypair()
        record = {"name": name, "public": public.decode(), "plugins": [str(e) for e in allow]}
        _write_private(path, json.dumps(record, indent=2).encode())
        return {
            "name": name,
            "endpoint": endpoint,
            "server_public": server_public.decode(),
            "public": public.decode(),
            "secret": secret.decode(),
            "plugins": record["plugins"],
        }

    def revoke(self, name: str) -> bool:
        """Delete credential ``name``; False when there was none."""
        try:
            (self._clients / f"{name}.json").unlink()
        except FileNotFoundError:
            return False
        return True

    def credentials(self) -> list[ClientCredential]:
        """Every credential not revoked, read from disk now."""
        found = []
        for path in sorted(self._clients.glob("*.json")) if self._clients.is_dir() else []:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                found.append(
                    ClientCredential(
                        name=str(data["name"]),
                        public=str(data["public"]).encode(),
                        allow=tuple(AllowEntry.parse(str(p)) for p in data["plugins"]),
                    )
                )
            except (OSError, ValueError, KeyError, TypeError):
                continue  # a half-written or hand-broken file admits nobody
        return found

    def lookup(self, public: bytes) -> ClientCredential | None:
        """The live credential with public key ``public`` (Z85), if any."""
        return next((c for c in self.credentials() if c.public == public), None)


def _write_private(path: Path, data: bytes) -> None:
    """Write ``data`` readable by the owner only, from the first byte."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
