"""``plughost-runner --connect``: a runner on another machine that joins a host over TCP.

The operator issues a credential on the host (``plughost runner-credentials
new``): a JSON file holding this runner's CurveZMQ key pair, the host's public
key and its endpoint. The runner finds the plugin folders under ``--plugins``,
connects, and offers each (id, version, digest of its folder); the host checks
the key (ZAP) and the offers against that credential's allow-list, and answers
which plugins it accepts. Only those are loaded. From then on it is served like
a runner the host spawned: calls, heartbeats, deadlines. On SIGTERM or SIGINT
it tells the host it is leaving, finishes its calls in flight (within
``--drain-timeout``) and exits 0 (:mod:`plughost_runner.remote.leaving`).

The runner keeps one ZeroMQ identity for its whole life, so a broken link that
comes back resumes the same session. When the host refuses it (unknown or
revoked key, no plugin on its allow-list) the runner exits with code 3, so the
engine that runs it (systemd, Kubernetes) shows the failure. This module needs
only the runner distribution and the SDK, never the host.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import socket
import sys
from pathlib import Path
from typing import Any

from plughost_runner.process.credentials import Credentials
from plughost_runner.remote.leaving import DEFAULT_DRAIN_TIMEOUT
from plughost_runner.remote.offers import find_plugins

__all__ = ["main", "read_credential_file"]

log = logging.getLogger("plughost_runner")


def read_credential_file(path: Path) -> dict[str, str]:
    """Read a credential written by ``plughost runner-credentials new``.

    Raises:
        ValueError: the file is not such a credential.
    """
    data: Any = json.loads(path.read_text(encoding="utf-8"))
    needed = ("name", "server_public", "public", "secret")
    if not isinstance(data, dict) or any(not isinstance(data.get(k), str) for k in needed):
        raise ValueError(f"{path} is not a plughost runner credential (needs {', '.join(needed)})")
    return {str(k): str(v) for k, v in data.items() if isinstance(v, str)}


def main(argv: list[str] | None = None) -> int:
    """Join a host as a remote runner; return the exit code."""
    parser = argparse.ArgumentParser(
        prog="plughost-runner",
        description="Serve the plugins in a folder to a plughost host over the network.",
    )
    parser.add_argument("--connect", required=True, help="the host's endpoint, tcp://HOST:PORT")
    parser.add_argument(
        "--credentials", required=True, type=Path, help="the file from runner-credentials new"
    )
    parser.add_argument("--plugins", required=True, type=Path, help="the plugin folders to offer")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path("plughost-data"),
        help="where plugins keep their data and temp directories (default: ./plughost-data)",
    )
    parser.add_argument(
        "--drain-timeout",
        type=float,
        default=DEFAULT_DRAIN_TIMEOUT,
        help="on SIGTERM or SIGINT, seconds the calls in flight may finish before the runner "
        f"exits (default: {DEFAULT_DRAIN_TIMEOUT:g}, inside Kubernetes' 30 s grace period)",
    )
    watching = parser.add_mutually_exclusive_group()
    watching.add_argument(
        "--watch-poll",
        action="store_true",
        default=os.environ.get("PLUGHOST_RUNNER_WATCH") == "poll",
        help="look for changes by polling (for bind mounts, network shares and volumes "
        "that send no filesystem events); also PLUGHOST_RUNNER_WATCH=poll",
    )
    watching.add_argument(
        "--no-watch",
        action="store_true",
        default=os.environ.get("PLUGHOST_RUNNER_WATCH") == "off",
        help="do not watch --plugins: edits, new and removed folders wait for a restart; "
        "also PLUGHOST_RUNNER_WATCH=off",
    )
    args = parser.parse_args(argv)
    if args.drain_timeout < 0:
        parser.error("--drain-timeout must not be negative")
    try:
        credential = read_credential_file(args.credentials)
    except (OSError, ValueError) as exc:
        print(f"plughost-runner: {exc}", file=sys.stderr)
        return 2
    if not args.plugins.is_dir():
        print(f"plughost-runner: {args.plugins} is not a folder", file=sys.stderr)
        return 2
    # Bytecode from a cache of this runner's own, never a plugin folder's __pycache__:
    # a .pyc there could stand in for a source file the host's pin covers.
    sys.pycache_prefix = str((args.data_dir / "pycache").resolve())
    offers = find_plugins(args.plugins, args.data_dir)
    if not offers:
        print(f"plughost-runner: no plugin folder in {args.plugins}", file=sys.stderr)
        return 2
    from plughost_runner.process.capture import LogCollector
    from plughost_runner.remote.service import RemoteService, Watch

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    keys = (credential["server_public"], credential["public"], credential["secret"])
    runner_id = f"{credential['name']}@{socket.gethostname()}:{os.getpid()}"
    print(
        f"plughost-runner {runner_id}: offering {', '.join(s.plugin_id for s in offers)} "
        f"to {args.connect}"
        + (" (not watching --plugins: restart to pick up changes)" if args.no_watch else ""),
        file=sys.stderr,
    )
    service = RemoteService(
        args.connect,
        runner_id,
        Credentials(bytearray(), keys),
        LogCollector(),
        offers=offers,
        watch=None if args.no_watch else Watch(args.plugins, args.data_dir, args.watch_poll),
    )
    service.drain_timeout = args.drain_timeout
    return asyncio.run(service.run())


if __name__ == "__main__":
    sys.exit(main())
