"""Early launch: the stdio upstream servers started while ``plughost serve`` is still importing.

A client that starts a new ``plughost serve`` per session (or per call) waits
for the server's upstream before its first call can run. Importing the MCP SDK
takes most of a second, and an upstream's own start (its sandbox launcher,
then the server) about as long again; this module lets the two overlap.

``plughost serve --config FILE`` calls :func:`launch` before it imports
anything heavy. It reads a memo of the last launches (``mcp-launch.json``,
beside the tool catalogue in the parent of ``[host] data_dir``) and starts each
server it names with the command, environment and working directory recorded
there: always ``python -m plughost_runner.sandbox.launch`` with that server's
sandbox policy, as every stdio server plughost starts. The memo holds only
when everything the launch was computed from is the same: the configuration
file's bytes, the working directory, the environment, the interpreter and
plughost's version, and the environment variables a launch reads
(:func:`_key`); a memo of other inputs starts nothing. It
is believed only if it is this user's own regular file that no one else may
write (:func:`plughost.mcp.own_file.read_own`), and never holds the values of a
server's ``env`` table (it names them; they are read from the configuration).

When the connection to a server opens (:func:`plughost.mcp.session.open_client`),
it computes the launch afresh, as always, and :func:`claim` hands over the
early process only if the fresh launch is exactly the one it was started
with; otherwise the early process is killed and the server starts as usual.
So an early launch can only be what plughost would have started anyway.
:func:`remember` records each launch that reached an answering server, for
the next start; :func:`discard` ends what no connection claimed.

Imports nothing beyond the standard library: it runs before the SDK is imported.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plughost.mcp.own_file import read_own, write_own

__all__ = [
    "MEMO_FILE",
    "Launch",
    "catalogue_folder",
    "claim",
    "discard",
    "end",
    "launch",
    "remember",
]

MEMO_FILE = "mcp-launch.json"
"""Beside the tool catalogue, in the parent of ``[host] data_dir``."""
_FORMAT = 1
_LAUNCHER = ("-m", "plughost_runner.sandbox.launch")
_REPORT_FD = "--report-fd"
_ENVIRONMENT = (
    *("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"),
    *("npm_config_cache", "UV_CACHE_DIR", "PIP_CACHE_DIR"),
)
"""What of serve's environment goes into a launch: the MCP SDK's inherited variables
(``mcp.client.stdio.DEFAULT_INHERITED_ENV_VARS``) and the package caches a server's
sandbox lets it use (:mod:`plughost.mcp.sandbox`); a test keeps them in step."""
_FROM_CONFIG = None
"""An ``env`` value the memo leaves to the configuration file (it may be a secret)."""


@dataclass(slots=True)
class Launch:
    """A server started early, until a connection claims it."""

    process: subprocess.Popen[bytes]
    report: int
    """The read end of the sandbox launcher's report pipe (non-blocking)."""
    argv: list[str]
    env: dict[str, str]
    cwd: str | None


@dataclass(slots=True)
class _Memo:
    path: Path | None = None
    key: str = ""
    config_env: dict[str, dict[str, str]] = field(default_factory=dict)
    launched: dict[str, Launch] = field(default_factory=dict)


_memo = _Memo()


def launch(config_file: Path, version: str) -> None:
    """Start the servers the memo of ``config_file`` names, if it still holds.

    Args:
        config_file: serve's ``--config``.
        version: plughost's version (a memo another version wrote starts nothing).

    Never raises: whatever goes wrong leaves the servers to their usual start.
    """
    try:
        raw = config_file.read_bytes()
        data = tomllib.loads(raw.decode("utf-8"))
    except (OSError, ValueError):
        return  # the configuration's own loading reports it
    try:
        _memo.key = _key(raw, version)
    except OSError:  # the working directory is gone: no memo can be told apart
        return
    _memo.path = _memo_path(config_file, data)
    _memo.config_env = _config_env(data)
    try:
        saved = json.loads(read_own(_memo.path))
    except (OSError, ValueError):
        return
    if not isinstance(saved, dict) or saved.get("format") != _FORMAT:
        return
    if saved.get("key") != _memo.key or not isinstance(saved.get("servers"), dict):
        return
    for name, entry in saved["servers"].items():
        plan = _plan(str(name), entry)
        if plan is not None:
            with contextlib.suppress(OSError, ValueError):
                _memo.launched[str(name)] = _start(*plan)


def claim(name: str, argv: list[str], env: dict[str, str], cwd: str | None) -> Launch | None:
    """The early process of server ``name`` if it runs exactly this launch; else None.

    ``argv`` is the fresh launch with its report descriptor as ``{report}``. A
    process that does not match is killed and forgotten. One that matches is
    claimed even if it has already ended: it was this very launch, so its exit
    and what it wrote to stderr are the server's answer, reported as a process
    that ends after its start is (a second start would only say it again, or,
    for a server that reads something once, wait for what the first consumed).
    """
    early = _memo.launched.pop(name, None)
    if early is None:
        return None
    if (early.argv, early.env, early.cwd) == (argv, env, cwd):
        return early
    end(early)
    return None


def remember(name: str, argv: list[str], env: dict[str, str], cwd: str | None) -> None:
    """Record the launch of server ``name`` (it answered) in the memo, for the next start.

    Only under ``plughost serve --config`` (:func:`launch` ran); a failure to
    write is left unsaid: the next start is then only as slow as before.
    """
    if _memo.path is None:
        return
    from_config = _memo.config_env.get(name, {})
    kept = {k: (_FROM_CONFIG if from_config.get(k) == v else v) for k, v in env.items()}
    try:
        saved = json.loads(read_own(_memo.path))
    except (OSError, ValueError):
        saved = None
    fresh = isinstance(saved, dict) and saved.get("key") == _memo.key
    servers = saved.get("servers", {}) if fresh and isinstance(saved, dict) else {}
    servers[name] = {"argv": argv, "env": kept, "cwd": cwd}
    with contextlib.suppress(OSError):
        write_own(_memo.path, {"format": _FORMAT, "key": _memo.key, "servers": servers})


def discard() -> None:
    """Kill every early process no connection claimed (serve is ending)."""
    while _memo.launched:
        end(_memo.launched.popitem()[1])


def end(early: Launch) -> None:
    """Kill an early process and close what it held."""
    with contextlib.suppress(OSError):
        os.killpg(early.process.pid, signal.SIGKILL)
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        early.process.wait(1.0)
    for pipe in (early.process.stdin, early.process.stdout, early.process.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    with contextlib.suppress(OSError):
        os.close(early.report)


def _memo_path(config_file: Path, data: dict[str, Any]) -> Path:
    return catalogue_folder(config_file, data) / MEMO_FILE


def catalogue_folder(config_file: Path | None, data: dict[str, Any]) -> Path:
    """Where serve keeps its tool catalogue for this configuration (its memos go there too).

    Args:
        config_file: serve's ``--config``, if any.
        data: That file's parsed TOML (empty without one).
    """
    host = data.get("host")
    data_dir = host.get("data_dir") if isinstance(host, dict) else None
    if config_file is None or not isinstance(data_dir, str):
        return Path("data")  # the default data_dir is data/plugins
    # Relative to the file, as ServeConfig.load reads it.
    return (config_file.resolve().parent / data_dir).parent


def _key(config: bytes, version: str) -> str:
    """The digest of everything a launch is computed from, short of the file system.

    A launch computed afresh is still compared whole with the memo's before its
    process is used (:func:`claim`); this only keeps a stale memo from starting anything.
    """
    inputs = [
        _FORMAT,
        hashlib.sha256(config).hexdigest(),
        os.getcwd(),
        [os.environ.get(name) for name in _ENVIRONMENT],
        sys.executable,
        version,
    ]
    return hashlib.sha256(json.dumps(inputs).encode()).hexdigest()


def _config_env(data: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Each server's ``env`` table in the configuration file."""
    mcp = data.get("mcp")
    servers = mcp.get("servers") if isinstance(mcp, dict) else None
    found: dict[str, dict[str, str]] = {}
    for name, server in (servers or {}).items() if isinstance(servers, dict) else ():
        env = server.get("env") if isinstance(server, dict) else None
        if isinstance(env, dict):
            found[str(name)] = {str(k): v for k, v in env.items() if isinstance(v, str)}
    return found


def _plan(name: str, entry: Any) -> tuple[list[str], dict[str, str], str | None] | None:
    """The launch an entry describes, if it is a sandboxed one whose folders are there."""
    if not isinstance(entry, dict):
        return None
    argv, env, cwd = entry.get("argv"), entry.get("env"), entry.get("cwd")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        return None
    if argv[:3] != [sys.executable, *_LAUNCHER] or _REPORT_FD not in argv:
        return None  # only ever the sandbox launcher, run by this interpreter
    if argv[argv.index(_REPORT_FD) + 1] != "{report}" or not isinstance(env, dict):
        return None
    if cwd is not None and not isinstance(cwd, str):
        return None
    from_config = _memo.config_env.get(name, {})
    full: dict[str, str] = {}
    for key, value in env.items():
        value = from_config.get(key) if value is _FROM_CONFIG else value
        if not isinstance(value, str):
            return None
        full[str(key)] = value
    if not _folders_ready(argv):
        return None
    return argv, full, cwd


def _folders_ready(argv: list[str]) -> bool:
    """Whether the policy's writable folders exist (the full start makes them; this does not)."""
    try:
        policy = json.loads(argv[argv.index("--policy") + 1])
        if policy.get("egress"):
            return False  # its egress gate is started with the connection, never early
        wanted = [*policy["write"], *(p for view in policy["overlays"] for p in view)]
    except (ValueError, IndexError, KeyError, TypeError, AttributeError):
        return False
    return all(isinstance(p, str) and os.path.exists(p) for p in wanted)


def _start(argv: list[str], env: dict[str, str], cwd: str | None) -> Launch:
    report, passed = os.pipe()
    try:
        os.set_blocking(report, False)
        actual = [str(passed) if a == "{report}" else a for a in argv]
        process = subprocess.Popen(
            actual,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,  # logged under its name once claimed (plughost.mcp.stdio)
            env=env,
            cwd=cwd,
            start_new_session=True,
            pass_fds=(passed,),
        )
    except BaseException:
        os.close(report)
        raise
    finally:
        os.close(passed)
    return Launch(process, report, argv, env, cwd)
