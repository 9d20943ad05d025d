"""Credentials of remote runners: the host's key pair, and per credential a key and allow-list.

Everything lives in ``[host.remote] keys_dir`` (mode 0700): ``server.key`` and
``server.key_secret`` (the host's CurveZMQ pair, made once), and one
``clients/<name>.json`` per credential with the runner's public key and the
plugins it may serve. The runner's secret key is written only to the file
handed to the operator (mode 0600), never kept by the host.

The host reads ``clients/`` when a runner authenticates and again every second
while runners are connected, so ``plughost runner-credentials revoke`` (which
deletes the file) takes effect at once, also for a host already running.

An allow-list entry is ``ID`` (any version), ``ID==VERSION``, or either with
``@sha256:HEX``, the digest of the plugin's whole folder pinned
(:mod:`plughost_sdk.plugin_digest`); what a runner offers beyond its
allow-list is refused, whatever it says about it. A pin made from a folder
(``--pin``) also records what that copy of the plugin declares when loaded
(``declares``: tool, command, API, resource and prompt names, by digest), and
the host registers nothing else from a runner offering that digest: the
digest is the runner's word, the names are what the host checks itself.

A credential's grants (``--grant CAPABILITY``) are the host capabilities its
plugins may call: the operator decides them here, at issue time, because the
manifest a remote runner reports is only what the runner says it is. A remote
plugin may call what its manifest asks *and* its credential grants.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zmq

from plughost_sdk.manifest import capability_allowed

__all__ = ["AllowEntry", "ClientCredential", "RemoteKeyStore"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_CAPABILITY = re.compile(r"^(\*|[A-Za-z0-9_-]+\.(\*|[A-Za-z0-9_.-]+))$")


@dataclass(frozen=True, slots=True)
class AllowEntry:
    """One plugin a credential may serve: an id, optionally its version and folder digest."""

    plugin_id: str
    version: str = ""
    plugin_sha256: str = ""
    """Hex SHA-256 of the plugin's folder (``plugin_sha256``); empty: any."""

    @classmethod
    def parse(cls, text: str) -> AllowEntry:
        """``ID``, ``ID==VERSION``, either followed by ``@sha256:HEX``.

        Raises:
            ValueError: not of that shape.
        """
        rest, at, pin = text.partition("@")
        plugin_id, _, version = rest.partition("==")
        pin = pin.strip().lower().removeprefix("sha256:")
        if not plugin_id.strip() or (at and not _SHA256.match(pin)):
            raise ValueError(
                f"{text!r}: expected a plugin id, optionally ==VERSION, optionally "
                "@sha256:HEX (64 hex digits)"
            )
        return cls(plugin_id.strip(), version.strip(), pin)

    def __str__(self) -> str:
        text = f"{self.plugin_id}=={self.version}" if self.version else self.plugin_id
        return f"{text}@sha256:{self.plugin_sha256}" if self.plugin_sha256 else text

    def refusal(self, version: str, plugin_sha256: str, digest_problem: str = "") -> str | None:
        """Why this entry does not cover an offer; None if it does."""
        if self.version and self.version != version:
            return f"version {self.version}"
        if self.plugin_sha256 and self.plugin_sha256 != plugin_sha256.lower():
            if not plugin_sha256 and digest_problem:
                return (
                    f"files sha256:{self.plugin_sha256} expected; the runner has no digest of "
                    f"the folder: {digest_problem}"
                )
            return (
                f"files sha256:{self.plugin_sha256} expected, "
                f"sha256:{plugin_sha256 or '(none)'} offered (the runner's copy of the plugin "
                "differs from the pinned one in some file)"
            )
        return None


@dataclass(frozen=True, slots=True)
class ClientCredential:
    """What the host knows of one issued credential."""

    name: str
    public: bytes
    allow: tuple[AllowEntry, ...]
    grants: tuple[str, ...] = ()
    """Host capabilities this credential's plugins may call (patterns as in a manifest)."""
    declares: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """By pinned digest, what that copy of the plugin declared when the pin was made."""

    def refusal(
        self, plugin_id: str, version: str, plugin_sha256: str = "", digest_problem: str = ""
    ) -> str | None:
        """Why this credential may not serve ``plugin_id`` at ``version``; None if it may."""
        entries = [e for e in self.allow if e.plugin_id == plugin_id]
        if not entries:
            return f"plugin {plugin_id} is not on the allow-list of credential {self.name}"
        reasons = [e.refusal(version, plugin_sha256, digest_problem) for e in entries]
        if all(reasons):
            if all(e.version and e.version != version for e in entries):
                wanted = ", ".join(e.version for e in entries)
                return (
                    f"plugin {plugin_id} {version} is not allowed for credential {self.name} "
                    f"(allowed versions: {wanted})"
                )
            return (
                f"plugin {plugin_id} {version} does not match the pin of credential "
                f"{self.name}: {'; '.join(r for r in reasons if r)}"
            )
        return None

    def grants_capability(self, capability: str) -> bool:
        """Whether the operator granted ``capability`` to this credential's plugins."""
        return capability_allowed(self.grants, capability)

    def undeclared(self, plugin_sha256: str, names: Iterable[str]) -> list[str]:
        """Of ``names`` (see ``declared_names``), those the copy pinned as ``plugin_sha256`` lacks.

        Empty when that digest was pinned without its declarations (``--plugin
        ID@sha256:HEX``), or not pinned at all.
        """
        pinned = self.declares.get(plugin_sha256.lower())
        if pinned is None:
            return []
        return sorted(set(names) - pinned)


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

    def issue(
        self,
        name: str,
        allow: list[AllowEntry],
        endpoint: str,
        grants: list[str] | None = None,
        declares: Mapping[str, Iterable[str]] | None = None,
    ) -> dict[str, Any]:
        """Make a credential; return the runner's file content (its secret key included).

        ``declares`` maps a pinned digest to what that copy of the plugin declares.

        Raises:
            ValueError: a bad name, an empty allow-list, a malformed grant, or a
                credential of that name exists.
        """
        if not _NAME.match(name):
            raise ValueError(f"{name!r}: a credential name is letters, digits, '_', '.', '-'")
        if not allow:
            raise ValueError("a credential needs at least one --plugin (or --pin-manifest)")
        for grant in grants or ():
            if not _CAPABILITY.match(grant):
                raise ValueError(f"{grant!r}: a grant is 'group.name', 'group.*' or '*'")
        server_public, _ = self.server_keys()
        path = self._clients / f"{name}.json"
        if path.exists():
            raise ValueError(f"credential {name} exists; revoke it first to issue a new one")
        public, secret = zmq.curve_keypair()
        record = {
            "name": name,
            "public": public.decode(),
            "plugins": [str(e) for e in allow],
            "grants": list(grants or ()),
            "declares": {k: sorted(v) for k, v in (declares or {}).items()},
        }
        _write_private(path, json.dumps(record, indent=2).encode())
        return {
            "name": name,
            "endpoint": endpoint,
            "server_public": server_public.decode(),
            "public": public.decode(),
            "secret": secret.decode(),
            "plugins": record["plugins"],
            "grants": record["grants"],
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
                        grants=tuple(str(g) for g in data.get("grants", ())),
                        declares={
                            str(k).lower(): frozenset(str(n) for n in v)
                            for k, v in dict(data.get("declares") or {}).items()
                        },
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
