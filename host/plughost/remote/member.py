"""One connected remote runner as a pool member: its state, its calls, what it may serve.

:class:`~plughost.remote.listener.RemoteListener` owns the socket and the
sessions; a :class:`RemoteRunner` is one session seen from a pool: it sends
calls through the listener and keeps the calls it is waiting on, so that a
runner that falls silent fails exactly its own. It also remembers what the
host accepted from it (plugin id and version) and what each accepted plugin's
manifest asks for (``capabilities``), which counts only within the grants of
the runner's credential.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from plughost.remote.keys import ClientCredential
from plughost.runners.call_errors import call_failure, component_failure, component_reply
from plughost.runners.channel import RemoteError
from plughost.runners.output import RunnerOutput
from plughost.tools.client_link import ClientLink
from plughost_sdk import wire
from plughost_sdk.errors import ProtocolError, RunnerCrashedError
from plughost_sdk.manifest import capability_allowed
from plughost_sdk.models import ToolExecutionResult

__all__ = ["Offer", "RemotePlugin", "RemoteRunner", "RemoteState", "Sender"]


class Sender(Protocol):
    """What sends a runner's calls: the listener that owns its socket."""

    async def request(
        self,
        runner: RemoteRunner,
        method: wire.Method,
        body: dict[str, Any],
        plugin_id: str,
        timeout: float,
    ) -> Any: ...


class RemoteState(Enum):
    """Where a remote runner is: loading, serving, leaving, silent, or gone for good."""

    STARTING = "starting"
    READY = "ready"
    DRAINING = "draining"
    """It said it is leaving (``runner.draining``): it gets no new call, finishes its own."""
    LOST = "lost"
    STOPPED = "stopped"


@dataclass(frozen=True, slots=True)
class Offer:
    """One plugin as a remote runner offers it: what the allow-list is checked against."""

    plugin_id: str
    version: str
    plugin_sha256: str = ""
    """The digest of the plugin's folder on the runner's machine, as the runner says."""
    capabilities: tuple[str, ...] = ()
    digest_problem: str = ""
    """Why the runner has no digest of the folder (a link in it, too many files)."""

    @classmethod
    def from_wire(cls, body: Any) -> Offer | None:
        """Read an offer; None when it is not a map with a plugin id."""
        if not isinstance(body, dict) or not body.get("plugin_id"):
            return None
        capabilities = body.get("capabilities")
        return cls(
            str(body["plugin_id"])[:200],
            str(body.get("version", ""))[:100],
            str(body.get("plugin_sha256", ""))[:64],
            tuple(str(c)[:100] for c in capabilities[:100])
            if isinstance(capabilities, list)
            else (),
            str(body.get("digest_problem", ""))[:500],
        )


@dataclass(frozen=True, slots=True)
class RemotePlugin:
    """A remote plugin as the capability router sees it: what it may call.

    ``allows_capability`` is the intersection of what the plugin's manifest
    asks (as the runner reported it) and what the credential grants (as the
    operator issued it), so the router's one manifest check covers both.
    """

    id: str
    asked: tuple[str, ...]
    credential: ClientCredential

    def allows_capability(self, capability: str) -> bool:
        """Whether the manifest asks for ``capability`` and the credential grants it."""
        return capability_allowed(self.asked, capability) and self.credential.grants_capability(
            capability
        )

    def denial(self, capability: str) -> str:
        """Why ``capability`` is denied, for the plugin author and the operator."""
        if not capability_allowed(self.asked, capability):
            return (
                f"plugin {self.id} may not call {capability}: add {capability!r} to "
                "'capabilities' in its _manifest.json"
            )
        return (
            f"plugin {self.id} may not call {capability}: credential {self.credential.name} "
            f"does not grant it (plughost runner-credentials new ... --grant {capability})"
        )


class RemoteRunner:
    """One connected remote runner, as a pool member."""

    def __init__(
        self,
        listener: Sender,
        identity: bytes,
        credential: ClientCredential,
        hello: dict[str, Any],
        accepted: dict[str, Offer],
        address: str,
    ) -> None:
        self._listener = listener
        self.identity = identity
        self.credential = credential
        self.runner_id = str(hello.get("runner_id") or credential.name)[:120]
        self.remote_pid = int(hello.get("pid") or 0)
        self.offers = accepted  # plugin id -> the offer the allow-list accepted
        self.reloading: dict[str, Offer] = {}  # accepted new versions, not loaded yet
        self.retiring: dict[str, Offer] = {}  # removed there; their last calls may run
        self.address = address
        self.state = RemoteState.STARTING
        self.report: dict[str, Any] = {"loaded": [], "failed": []}
        self.last_beat = asyncio.get_running_loop().time()
        self.lost_since: float | None = None
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.serving: dict[int, tuple[str, ClientLink | None]] = {}
        """Calls in flight by request id: the plugin and the client behind each."""
        self.output: RunnerOutput | None = None

    pid: int | None = None  # no local process: pool views show none

    @property
    def accepted(self) -> dict[str, str]:
        """The plugins the host accepted from this runner, with their versions."""
        return {plugin_id: offer.version for plugin_id, offer in self.offers.items()}

    @property
    def where(self) -> str:
        """Where the runner is, for operators: its address and credential."""
        return f"{self.address} (credential {self.credential.name}, pid {self.remote_pid} there)"

    @property
    def plugin_ids(self) -> list[str]:
        """The plugins the host accepted from this runner."""
        return sorted(self.offers)

    @property
    def healthy(self) -> bool:
        """Whether calls go to it: it is ready and has not fallen silent."""
        return self.state is RemoteState.READY

    @property
    def inflight(self) -> int:
        """Calls sent to it and not answered yet."""
        return len(self.pending)

    def grants(self, plugin_id: str) -> RemotePlugin | None:
        """What accepted plugin ``plugin_id`` may call; None if it was not accepted.

        A plugin removed on the runner's machine keeps its grants while calls the host
        sent it before are still running there.
        """
        offer = self.offers.get(plugin_id)
        if offer is None and any(p == plugin_id for p, _ in self.serving.values()):
            offer = self.retiring.get(plugin_id)
        if offer is None:
            return None
        return RemotePlugin(plugin_id, offer.capabilities, self.credential)

    def fail_all(self, reason: str) -> None:
        """Fail every call waiting on this runner with ``plugin_crashed``."""
        for future in self.pending.values():
            if not future.done():
                future.set_exception(RunnerCrashedError(reason))
        self.pending.clear()

    async def invoke(
        self, plugin_id: str, tool: str, arguments: dict[str, Any], timeout: float
    ) -> ToolExecutionResult:
        """Call a tool on the remote runner; never raises."""
        body = {"tool": tool, "arguments": arguments}
        try:
            reply = await self._request("tool.invoke", body, plugin_id, timeout)
            return wire.result_from_wire((reply or {}).get("result"))
        except (TimeoutError, RemoteError, RunnerCrashedError, ProtocolError) as exc:
            return call_failure(exc, tool, plugin_id, timeout)

    async def invoke_component(
        self, plugin_id: str, kind: str, name: str, args: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        """Call a command, handler, hook or API on the remote runner; never raises."""
        body = {"type": kind, "name": name, "args": args}
        try:
            reply = await self._request("component.invoke", body, plugin_id, timeout)
        except (TimeoutError, RemoteError, RunnerCrashedError, ProtocolError) as exc:
            return component_failure(exc, name, plugin_id, timeout, kind)
        return component_reply(reply)

    async def update_config(
        self, plugin_id: str, config: dict[str, Any], version: str, scope: str = "self"
    ) -> bool:
        """A remote plugin's configuration lives beside it, on the runner's machine.

        Raises:
            RunnerCrashedError: always; the host does not configure remote plugins.
        """
        raise RunnerCrashedError(f"plugin {plugin_id} is configured on its runner's machine")

    async def request_content(
        self, method: wire.Method, plugin_id: str, body: dict[str, Any], timeout: float
    ) -> Any:
        """Read a resource or prompt of a remote plugin.

        Raises:
            RemoteError, TimeoutError, RunnerCrashedError.
        """
        return await self._request(method, body, plugin_id, timeout)

    async def _request(
        self, method: wire.Method, body: dict[str, Any], plugin_id: str, timeout: float
    ) -> Any:
        if self.state is not RemoteState.READY:
            raise RunnerCrashedError(f"remote runner {self.runner_id} is {self.state.value}")
        return await self._listener.request(self, method, body, plugin_id, timeout)
