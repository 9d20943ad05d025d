"""Every stdio MCP server plughost starts runs in the sandbox runners get.

:func:`sandboxed` turns a server's configuration into the command that starts
it through ``python -m plughost_runner.sandbox.launch`` (own user, mount, pid
and network namespaces, no capabilities, Landlock, seccomp; nothing outlives
it), with:

- **read-only**: the system, the server's own installation (the directory its
  command lives in, found through symlinks, its ``#!`` interpreter and a
  virtualenv's base Python, a ``node_modules`` tree's project), and each
  file named in its ``args`` with its installation; plus ``read`` from its
  configuration;
- **copy-on-write**: the package caches ``npx``, ``uvx`` and ``pip`` run
  servers from (``~/.npm``, ``~/.cache/uv``, ``~/.cache/pip``, or where
  ``npm_config_cache``/``UV_CACHE_DIR``/``PIP_CACHE_DIR`` point): the tool
  uses and writes them, its writes land in its data directory, and the
  user's cache never changes;
- **writable**: its own data directory (``<data_dir>``, by default
  ``data/mcp/<name>``: its ``HOME`` and ``TMPDIR``), each directory and
  each file other than code named in its ``args`` or as its ``cwd`` (the
  operator named them: server-filesystem's root, mcp-server-git's
  repository, a log), plus ``write`` from its configuration; a script named
  in its ``args`` stays read-only, so a server cannot rewrite its own code;
- **network**: none, unless its ``network`` grants name destinations
  (:mod:`plughost.destinations`); a Python server then reaches them through an
  :class:`~plughost.egress.EgressGate` of its own;
- **environment**: the SDK's safe default set (``PATH``, ``USER``...) with
  ``HOME``/``TMPDIR`` its own, plus exactly what its ``env`` gives.

HTTP and SSE servers are other people's processes, reached over the network;
nothing here applies to them.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from mcp.client.stdio import get_default_environment

from plughost.destinations import Grants
from plughost.egress import EgressGate
from plughost.mcp.config import MCPServerConfig

__all__ = [
    "LaunchPlan",
    "SandboxState",
    "install_roots",
    "read_report",
    "sandboxed",
]

_CODE = frozenset({".py", ".pyc", ".js", ".mjs", ".cjs", ".ts", ".sh", ".jar", ".rb", ".pl"})
# The package caches npx, uvx and pip run servers from: the variable that points a tool at
# its cache, and where it is under the user's home when the variable is unset.
_CACHES = {"npm_config_cache": ".npm", "UV_CACHE_DIR": ".cache/uv", "PIP_CACHE_DIR": ".cache/pip"}


@dataclass(slots=True)
class SandboxState:
    """What a server's sandbox turned out to be, for status and metrics."""

    active: list[str] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)
    gate: EgressGate | None = None

    @property
    def denied(self) -> int:
        return sum(self.gate.denied.values()) if self.gate is not None else 0


@dataclass(frozen=True, slots=True)
class LaunchPlan:
    """The command that starts a server sandboxed, its environment, and the report pipe."""

    argv: list[str]
    env: dict[str, str]
    report: int  # read end: the launcher's one-line JSON report
    passed: int  # write end, handed to the launcher (the transport closes it)


@contextlib.asynccontextmanager
async def sandboxed(
    name: str, config: MCPServerConfig, state: SandboxState
) -> AsyncIterator[LaunchPlan]:
    """Plan the sandboxed start of stdio server ``name``; its gate lives as long as this."""
    env, read, write, views = _layout(name, config)
    grants = Grants(config.network)
    async with contextlib.AsyncExitStack() as stack:
        gate_path = ""
        if grants:
            private = Path(tempfile.mkdtemp(prefix="plughost-mcp-"))
            stack.callback(shutil.rmtree, private, True)
            gate = EgressGate(
                private / "gate",
                grants,
                runner_id=f"mcp:{name}",
                plugin_ids=[name],
                kind="MCP server",
            )
            await gate.start()
            stack.push_async_callback(gate.aclose)
            state.gate = gate
            gate_path = str(gate.path)
            read.append(_runner_sandbox_dir())
        policy = {
            "user_namespace": True,
            "network_namespace": True,
            "pid_namespace": True,
            "no_new_privs": True,
            "seccomp": True,
            "landlock": True,
            "read": sorted(set(read) - set(write)),
            "write": sorted(set(write)),
            "egress": gate_path,
            "overlays": views,
        }
        report, passed = os.pipe()
        os.set_blocking(report, False)
        stack.callback(_close, report)  # the write end is the transport's to close
        argv = [
            sys.executable,
            "-m",
            "plughost_runner.sandbox.launch",
            "--policy",
            json.dumps(policy, separators=(",", ":")),
            "--report-fd",
            str(passed),
            "--",
            _command(config.command or "", env),
            *config.args,
        ]
        yield LaunchPlan(argv, env, report, passed)


def _layout(
    name: str, config: MCPServerConfig
) -> tuple[dict[str, str], list[str], list[str], list[list[str]]]:
    """The server's environment, what it may read and write, and its cache views."""
    home = Path(config.data_dir or Path("data/mcp") / name).resolve()
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    env = {**get_default_environment(), "HOME": str(home), "TMPDIR": str(home / "tmp")}
    env.update(config.env)
    read, write = _paths(config, env)
    write.append(str(home))
    return env, read, write, _cache_views(env, home)


def _cache_views(env: dict[str, str], home: Path) -> list[list[str]]:
    """``[cache, upper, work]`` for each package cache: writable copy-on-write, kept apart.

    npx and uvx write their caches as they run (locks, temporary files, the
    packages they unpack); the server gets a view whose writes land in its own
    data directory, so the user's cache is used and never changed.
    """
    views = []
    for variable, under_home in _CACHES.items():
        cache = Path(env.get(variable) or Path.home() / under_home)
        if not cache.is_dir():
            continue
        cache = cache.resolve()
        env[variable] = str(cache)  # its HOME is the data directory: point the tool back
        layers = home / ".caches" / variable
        (layers / "upper").mkdir(parents=True, exist_ok=True)
        (layers / "work").mkdir(exist_ok=True)
        views.append([str(cache), str(layers / "upper"), str(layers / "work")])
    return views


def read_report(fd: int, state: SandboxState) -> None:
    """Take the launcher's report (non-blocking; nothing if it has not come yet)."""
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(os.read(fd, 65536).split(b"\n", 1)[0] or b"{}")
        state.active = [str(p) for p in data.get("active", [])]
        state.missing = {str(k): str(v) for k, v in dict(data.get("missing", {})).items()}


def _close(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _runner_sandbox_dir() -> str:
    """Where the launcher's ``sitecustomize`` and socket layer are (a server reads them)."""
    import importlib.util

    spec = importlib.util.find_spec("plughost_runner")
    if spec is None or spec.origin is None:
        return ""
    return str(Path(spec.origin).resolve().parent / "sandbox")


def _command(command: str, env: dict[str, str]) -> str:
    """The program's path, found on the server's ``PATH`` as an ``exec`` would.

    Raises:
        FileNotFoundError: there is no such program (as starting it unsandboxed would).
    """
    found = shutil.which(command, path=env.get("PATH"))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, f"no such program: {command!r}", command)
    return found


def _paths(config: MCPServerConfig, env: dict[str, str]) -> tuple[list[str], list[str]]:
    read = list(install_roots(_command(config.command or "", env), env))
    write: list[str] = []
    cwd = Path(config.cwd).resolve() if config.cwd else None
    if cwd is not None:
        write.append(str(cwd))
    for arg in config.args:
        value = arg.split("=", 1)[1] if arg.startswith("--") and "=" in arg else arg
        if not value or value.startswith("-") or len(value) > 4096:
            continue
        path = Path(value) if Path(value).is_absolute() or cwd is None else cwd / value
        with contextlib.suppress(OSError):
            if path.is_dir():
                write.append(str(path.resolve()))
            elif path.is_file():  # a script to run, or a file to keep (a log, a database)
                read.extend(install_roots(str(path), env))
                if path.suffix not in _CODE:
                    write.append(str(path.resolve()))
    read += [str(Path(p).resolve()) for p in config.read]
    write += [str(Path(p).resolve()) for p in config.write]
    return read, write


def install_roots(command: str, env: dict[str, str]) -> list[str]:
    """The directories a program needs to run: its installation and its interpreter's.

    ``command`` is a path; symlinks are followed (``node_modules/.bin/x``), the
    ``#!`` line's interpreter is looked up on ``PATH``, a virtualenv leads to the
    Python it was made from. Each root is the installation holding a file: a
    ``node_modules`` tree's project, or else the directory above ``bin/``.
    """
    roots: list[str] = []
    pending = [command]
    seen: set[str] = set()
    while pending:
        path = Path(pending.pop())
        if not path.is_absolute():
            found = shutil.which(str(path), path=env.get("PATH"))
            if found is None:
                continue
            path = Path(found)
        for candidate in {path.absolute(), path.resolve()}:
            if str(candidate) in seen or not candidate.exists():
                continue
            seen.add(str(candidate))
            root = _root_of(candidate)
            roots.append(str(root))
            pending += _interpreter(candidate)
            venv = root / "pyvenv.cfg"
            if venv.is_file():
                pending += _venv_home(venv)
    return roots


def _root_of(path: Path) -> Path:
    parts = path.parts
    if "node_modules" in parts:
        return Path(*parts[: parts.index("node_modules")])
    parent = path.parent
    return parent.parent if parent.name in ("bin", "sbin") else parent


def _interpreter(path: Path) -> list[str]:
    if not path.is_file():  # a FIFO or a device would block the host on open
        return []
    try:
        with path.open("rb") as handle:
            first = handle.readline(256)
    except OSError:
        return []
    if not first.startswith(b"#!"):
        return []
    words = first[2:].decode(errors="replace").split()
    if not words:
        return []
    if Path(words[0]).name == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    return words[:1]


def _venv_home(config: Path) -> list[str]:
    with contextlib.suppress(OSError):
        for line in config.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                return [str(Path(value.strip()) / "python3")]
    return []
