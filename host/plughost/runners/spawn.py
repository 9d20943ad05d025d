"""How a runner process is started: its endpoint, credentials, environment and command.

The runner's environment is scrubbed: only an allow-list of variables (locale,
PATH, HOME...) plus whatever the operator allow-lists reaches plugin code, so
the host's API keys never do. The runner's credentials (its per-spawn token
and, over ``tcp://``, its CURVE keys) are not in the environment either, where
``/proc/<pid>/environ`` would show them for the process's whole life: they are
written to a pipe whose read end the runner inherits (``--credentials-fd``),
reads once and closes before any plugin code runs. ``ipc://`` endpoints live in
a private directory (mode 0700) because ZeroMQ creates its socket files
world-accessible.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from plughost.runners.child_process import ChildProcess, start_child
from plughost.runners.fork_server import ForkedProcess, ForkServer, ForkServerError

__all__ = [
    "BASE_ENV_ALLOWLIST",
    "SocketDirectory",
    "credentials_pipe",
    "new_token",
    "runner_command",
    "runner_env",
    "start_runner_process",
]

log = logging.getLogger(__name__)

BASE_ENV_ALLOWLIST: tuple[str, ...] = (
    "PATH",
    "HOME",
    "USER",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "PYTHONPATH",
    "PYTHONIOENCODING",
    "VIRTUAL_ENV",
    "SYSTEMROOT",
)


def new_token() -> str:
    """A fresh per-spawn secret (256 bits)."""
    return secrets.token_hex(32)


def credentials_pipe(token: str, curve: tuple[str, str, str] | None = None) -> int:
    """A pipe holding a runner's credentials; return its read end (the caller closes it).

    The payload is one JSON object, ``{"token": str, "curve": [server public, client
    public, client secret] | null}``, small enough for the pipe's buffer, so the write
    end is closed before the runner even starts and the runner reads to end-of-file.
    """
    payload = json.dumps({"token": token, "curve": list(curve) if curve else None}).encode()
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, payload)
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    return read_end


def runner_env(
    allow: Iterable[str] = (), source: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a runner: allow-listed variables only, never a credential."""
    source = os.environ if source is None else source
    names = set(BASE_ENV_ALLOWLIST) | set(allow)
    env = {name: source[name] for name in names if name in source}
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def runner_command(
    endpoint: str, runner_id: str, python: str | None = None, nice: int = 0, sandbox: str = ""
) -> list[str]:
    """The argv that starts a runner (by module name: the host never imports the runner).

    ``nice`` is applied by the runner itself before it imports anything heavy: a
    ``preexec_fn`` would do it in the child too, but would also stop
    :mod:`subprocess` from using ``vfork``, which keeps spawning cheap for a host
    with a large heap.
    """
    command = [
        python or sys.executable,
        "-m",
        "plughost_runner",
        "--endpoint",
        endpoint,
        "--runner-id",
        runner_id,
        "--parent-pid",
        str(os.getpid()),
    ]
    if nice:
        command += ["--nice", str(nice)]
    if sandbox:  # the policy the runner applies to itself (plughost.runners.sandbox)
        command += ["--sandbox", sandbox]
    return command


_SOCKET_PATH_MAX = 107
"""The longest path a Unix socket can have (``sockaddr_un.sun_path`` less its NUL)."""
_SOCKET_NAME_MAX = 48
"""Longer runner ids are shortened (with a hash) to name their socket file."""


class SocketDirectory:
    """A private directory (0700) holding the host's ``ipc://`` socket files.

    It lives in the temp directory (``TMPDIR``) unless that path is too long to
    leave room for a socket name, as in a deep build or test directory; then it
    lives in ``/tmp``, so a long ``TMPDIR`` never stops runners from starting.
    """

    def __init__(self) -> None:
        base = tempfile.gettempdir()
        room = _SOCKET_PATH_MAX - len("/plughost-xxxxxxxx/.sock") - _SOCKET_NAME_MAX
        if len(os.fsencode(base)) > room and os.path.isdir("/tmp"):
            base = "/tmp"
        self.path = Path(tempfile.mkdtemp(prefix="plughost-", dir=base))
        self.path.chmod(0o700)

    def endpoint(self, runner_id: str) -> str:
        """The ipc endpoint for ``runner_id`` inside this directory."""
        return f"ipc://{self._socket_file(runner_id)}"

    def secure(self, runner_id: str) -> None:
        """Restrict a bound socket file to the owner (ZeroMQ creates it 0755)."""
        socket_file = self._socket_file(runner_id)
        if socket_file.exists():
            socket_file.chmod(0o600)

    def _socket_file(self, runner_id: str) -> Path:
        name = runner_id
        if len(name) > _SOCKET_NAME_MAX:
            digest = hashlib.sha256(runner_id.encode()).hexdigest()[:8]
            name = f"{runner_id[: _SOCKET_NAME_MAX - 9]}-{digest}"
        return self.path / f"{name}.sock"

    def remove(self) -> None:
        """Delete the directory and any socket files left in it."""
        shutil.rmtree(self.path, ignore_errors=True)


async def start_runner_process(
    command: list[str], env: dict[str, str], credentials: int, fork_server: ForkServer | None
) -> ChildProcess | ForkedProcess:
    """Start a runner, forked by ``fork_server`` when it can, else as a new interpreter.

    ``credentials`` is the read end of its credentials pipe: the fork server
    receives it as a descriptor and never reads it; an interpreter inherits it.

    Raises:
        OSError: the runner could not be started either way.
    """
    if fork_server is not None and fork_server.serves(command):
        try:
            return await fork_server.spawn(command[3:], env, credentials)
        except ForkServerError as exc:
            log.debug("%s; starting the runner as an interpreter", exc)
    command = [*command, "--credentials-fd", str(credentials)]
    return await start_child(command, env, pass_fds=[credentials])
