"""A rehearsal of a runner's start, run once by the fork server before it forks any runner.

CPython does work the first time it runs a piece of code that it does not do
again: it quickens a function's bytecode and specialises its instructions,
fills the type attribute cache, compiles and caches regular expressions. A runner forked
from a server that never ran that code pays for it in every runner, on the
cores the other runners start on. Rehearsed once in the fork server, it is paid
once: each forked runner finds the code warm.

Everything rehearsed is pure or undone: the runner's command line read, a
sandbox policy read and the interpreter's paths filtered for it, the wire
messages of a start encoded and decoded, and, on an event loop that is closed
afterwards (no thread: its default executor is never made), the two plugins
in this package (one written against ``plughost_sdk``, one against
``maibot_sdk``) loaded and unloaded as a runner loads a plugin. They are this
package's own code, never a user's; they call no capability and touch no
file. Nothing here applies a sandbox, opens a socket or descriptor that
outlives it, or starts a thread.

May import: ``sandbox``, ``plugins`` (and what they import). Lives here:
:func:`rehearse`. Not here: the fork server (:mod:`plughost_runner.forkserver`).
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from plughost_runner.plugins.loader import LoadedPlugin, PluginSpec, load_plugin, unload_plugin
from plughost_runner.sandbox import SandboxPolicy, interpreter_paths
from plughost_sdk import wire

__all__ = ["RehearsalError", "rehearse"]

_HERE = Path(__file__).resolve().parent
_PLUGINS = (("plughost_plugin", "plughost"), ("maibot_plugin", "maibot"))  # (folder, flavor)
_NOWHERE = "/nonexistent/plughost-rehearsal"  # never created: nothing rehearsed writes files
_POLICY = SandboxPolicy(
    user_namespace=True,
    network_namespace=True,
    pid_namespace=True,
    no_new_privs=True,
    seccomp=True,
    landlock=True,
    read=[f"{_NOWHERE}/plugin"],
    write=[f"{_NOWHERE}/data", f"{_NOWHERE}/temp"],
    connect_ports=[],
    overlays=[[f"{_NOWHERE}/plugin", f"{_NOWHERE}/layer/upper", f"{_NOWHERE}/layer/work"]],
)
_ARGV = [
    *("--endpoint", f"ipc://{_NOWHERE}/runner.sock", "--runner-id", "rehearsal"),
    *("--sandbox", _POLICY.to_json(), "--credentials-fd", "0"),
    *("--parent-pid", "1", "--report-fd", "0"),
]


class RehearsalError(RuntimeError):
    """A rehearsal plugin did not load: this installation of the runner is broken."""


def rehearse(read_command_line: Callable[[list[str]], object]) -> None:
    """Run the pure parts of a runner's start once, then collect what that left.

    ``read_command_line`` reads the runner's command line
    (:func:`plughost_runner.__main__.read_command_line`).
    Call in the fork server before it freezes its heap (``gc.freeze``) and forks.
    One pass warms most of it: more passes (CPython 3.11 quickens a function's
    bytecode on its eighth call) took about 0.4 ms more off each runner's start
    and cost the server 18 ms more, paid back only past some forty runners.

    Raises:
        RehearsalError: the runner's command line refused the rehearsal's, or a
            rehearsal plugin did not load.
    """
    try:
        read_command_line(_ARGV)
    except SystemExit as exc:  # argparse exits on a bad command line: not in the fork server
        raise RehearsalError(f"the runner's command line refused the rehearsal's ({exc})") from exc
    interpreter_paths(SandboxPolicy.from_json(_POLICY.to_json()))
    asyncio.run(_load_and_unload())
    gc.collect(1)  # its young garbage; a full collection would cost the server ~30 ms


def _hello_answer() -> dict[str, Any]:
    """A ``runner.hello`` and the host's answer naming the plugins, through the codec."""
    hello = wire.request(
        1,
        "runner.hello",
        {"token": "-", "protocol": wire.PROTOCOL_VERSION, "runner_id": "rehearsal", "pid": 2},
        deadline_ms=10_000,
    )
    plugins = [_spec_body(name, flavor) for name, flavor in _PLUGINS]
    answer = wire.response(hello, {"plugins": plugins, "heartbeat_interval": 0.5})
    *_, decoded = wire.decode_many(wire.encode(hello) + wire.encode(answer), [])
    body = decoded.get("body")
    return body if isinstance(body, dict) else {"plugins": []}


def _spec_body(folder: str, flavor: str) -> dict[str, Any]:
    return {
        "plugin_id": f"plughost.rehearsal-{flavor}",
        "path": str(_HERE / folder),
        "data_dir": f"{_NOWHERE}/data",
        "temp_dir": f"{_NOWHERE}/temp",
        "flavor": flavor,
    }


async def _load_and_unload() -> None:
    """Load and unload each plugin as a runner does, on the loop the rehearsal runs."""
    for body in _hello_answer()["plugins"]:
        spec = PluginSpec.from_wire(body)
        loaded = await load_plugin(spec, _NoCapabilities())
        if not isinstance(loaded, LoadedPlugin):
            raise RehearsalError(f"the rehearsal plugin in {spec.path} failed: {loaded.reason}")
        await unload_plugin(loaded, timeout=1.0)


class _NoCapabilities:
    """The rehearsal plugins' bridge: they call no capability, and none is served."""

    async def call_capability(
        self, plugin_id: str, capability: str, args: dict[str, Any], timeout_ms: int | None
    ) -> Any:
        raise RuntimeError("a rehearsal plugin has no capabilities")

    def report_progress(self, progress: float, total: float | None, message: str | None) -> None:
        return None

    def is_cancelled(self) -> bool:
        return False
