"""Runners on other machines: one CurveZMQ ROUTER socket the host listens on.

A remote runner (``plughost-runner --connect``) authenticates with the key of a
credential the operator issued (:mod:`plughost.runners.remote_keys`): ZAP
admits only keys of live credentials, and every message is checked again
against the key its session started with. Its ``runner.hello`` offers plugins
(id, version); the host accepts only those on the credential's allow-list (and
not served by this host's own runners), and later believes the runner's
``runner.ready`` report only for the plugins it accepted. Refusals are logged
with the credential and the reason.

A runner is a member of its plugins' pools (:class:`~plughost.runners.pool.RunnerPool`),
with the same least-loaded balancing as local replicas. When it falls silent
(no heartbeat for ``heartbeat_interval * heartbeat_misses``) its calls in flight
fail with ``plugin_crashed`` and no new call goes to it; after
``[host.remote] grace`` seconds it leaves its pools (a plugin with no member
left loses its tools). Any message from it later resumes it, tools included:
the runner keeps one ZeroMQ identity, so a link that comes back is the same
session. A revoked credential ends its sessions at once.

Remote runners get no host capabilities (``capability.call`` is refused): what
a plugin may ask of the host is declared in its manifest, and the manifest of
a remote plugin is only what the runner says it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from enum import Enum
from typing import Any

import zmq
import zmq.asyncio
from zmq.auth.asyncio import AsyncioAuthenticator

from plughost.redaction import SecretRedactor
from plughost.runners.call_errors import call_failure, component_failure, component_reply
from plughost.runners.channel import RemoteError
from plughost.runners.output import RunnerOutput
from plughost.runners.remote_keys import ClientCredential, RemoteKeyStore
from plughost.settings import HostSettings
from plughost_sdk import wire
from plughost_sdk.errors import ProtocolError, RunnerCrashedError
from plughost_sdk.models import ToolExecutionResult
from plughost_sdk.socket_pump import SocketPump

__all__ = ["RemoteListener", "RemoteRunner", "RemoteState"]

log = logging.getLogger(__name__)

ZAP_DOMAIN = "plughost-remote"
_MAX_PARTS = 2 + wire.MAX_BLOBS
_MAX_PARKED = 1000
"""Runners past their grace remembered for a return; the oldest is forgotten first."""


class RemoteState(Enum):
    """Where a remote runner is: loading, serving, silent, or gone for good."""

    STARTING = "starting"
    READY = "ready"
    LOST = "lost"
    STOPPED = "stopped"


class RemoteRunner:
    """One connected remote runner, as a pool member."""

    def __init__(
        self,
        listener: RemoteListener,
        identity: bytes,
        credential: ClientCredential,
        hello: dict[str, Any],
        accepted: dict[str, str],
        address: str,
    ) -> None:
        self._listener = listener
        self.identity = identity
        self.credential = credential
        self.runner_id = str(hello.get("runner_id") or credential.name)[:120]
        self.remote_pid = int(hello.get("pid") or 0)
        self.accepted = accepted  # plugin id -> version, as checked against the allow-list
        self.address = address
        self.state = RemoteState.STARTING
        self.report: dict[str, Any] = {"loaded": [], "failed": []}
        self.last_beat = asyncio.get_running_loop().time()
        self.lost_since: float | None = None
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.output: RunnerOutput | None = None

    pid: int | None = None  # no local process: pool views show none

    @property
    def where(self) -> str:
        """Where the runner is, for operators: its address and credential."""
        return f"{self.address} (credential {self.credential.name}, pid {self.remote_pid} there)"

    @property
    def plugin_ids(self) -> list[str]:
        """The plugins the host accepted from this runner."""
        return sorted(self.accepted)

    @property
    def healthy(self) -> bool:
        """Whether calls go to it: it is ready and has not fallen silent."""
        return self.state is RemoteState.READY

    @property
    def inflight(self) -> int:
        """Calls sent to it and not answered yet."""
        return len(self.pending)

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


JoinCallback = Callable[[RemoteRunner], None]
LeaveCallback = Callable[[RemoteRunner, str], None]


class RemoteListener:
    """Accepts remote runners on ``[host.remote] listen`` and keeps their sessions."""

    def __init__(
        self,
        settings: HostSettings,
        store: RemoteKeyStore,
        *,
        on_join: JoinCallback,
        on_silent: LeaveCallback,
        on_leave: LeaveCallback,
        redactor: SecretRedactor | None = None,
        is_local: Callable[[str], bool] = lambda _: False,
    ) -> None:
        self._settings = settings
        self._store = store
        self._on_join, self._on_silent, self._on_leave = on_join, on_silent, on_leave
        self._redact = redactor.redact if redactor is not None else str
        self._is_local = is_local
        self._sessions: dict[bytes, RemoteRunner] = {}
        # Runners whose grace ran out, by identity: one that comes back resumes its session.
        self._parked: dict[bytes, RemoteRunner] = {}
        self._strangers: set[bytes] = set()  # identities already logged as unknown
        self._next_id = 0
        self._context: zmq.asyncio.Context | None = None
        self._auth: AsyncioAuthenticator | None = None
        self._sock: zmq.Socket[bytes] | None = None
        self._pump: SocketPump | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.endpoint = ""

    def runners(self) -> list[RemoteRunner]:
        """Every session, ready, loading or silent."""
        return list(self._sessions.values())

    async def start(self) -> None:
        """Bind the socket and start answering ZAP for it.

        Raises:
            zmq.ZMQError: the address cannot be bound.
        """
        listen = self._settings.remote.listen
        if not listen:
            raise ValueError("[host.remote] listen is not set")
        public, secret = self._store.server_keys()
        # Its own context: its own ZAP handler, apart from the one of local TCP runners.
        self._context = zmq.asyncio.Context()
        self._auth = AsyncioAuthenticator(self._context, log=log)
        self._auth.start()
        self._auth.configure_curve_callback(domain=ZAP_DOMAIN, credentials_provider=self)
        sock: Any = self._context.socket(zmq.ROUTER, socket_class=zmq.Socket)  # type: ignore[arg-type]
        self._sock = sock
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        sock.setsockopt(zmq.ROUTER_HANDOVER, 1)  # a runner back from a broken link takes over
        sock.setsockopt(zmq.MAXMSGSIZE, self._settings.runner.max_message_bytes + 64 * 1024)
        sock.setsockopt_string(zmq.ZAP_DOMAIN, ZAP_DOMAIN)
        sock.setsockopt(zmq.CURVE_SERVER, 1)
        sock.setsockopt(zmq.CURVE_SECRETKEY, secret)
        sock.setsockopt(zmq.CURVE_PUBLICKEY, public)
        sock.bind(listen)
        self.endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT)
        self._pump = SocketPump(sock, max_parts=_MAX_PARTS, on_send_error=self._send_failed)
        self._tasks = [
            asyncio.create_task(self._pump.run(self._on_message)),
            asyncio.create_task(self._watch()),
        ]
        log.info("accepting remote runners on %s", self.endpoint)

    def callback(self, domain: str, key: bytes) -> bool:
        """ZAP: admit a runner only with the key of a credential that is not revoked."""
        credential = self._store.lookup(key)
        if credential is None:
            log.warning(
                "refused a remote runner: its key %s… belongs to no credential (unknown or "
                "revoked)",
                key[:8].decode(errors="replace"),
            )
            return False
        return True

    def _on_message(self, parts: list[zmq.Frame]) -> None:
        if len(parts) < 2:
            return
        identity, frame = parts[0].bytes, parts[1]
        key = _property(frame, "User-Id").encode()
        try:
            envelopes = wire.decode_many(frame.buffer, [p.buffer for p in parts[2:]])
        except ProtocolError as exc:
            log.warning("rejected a frame from a remote runner: %s", exc)
            return
        session = self._sessions.get(identity) or self._unpark(identity, key)
        if session is not None and session.credential.public != key:
            log.warning("dropped a frame from %s under another key", session.runner_id)
            return
        for envelope in envelopes:
            if session is None or envelope["method"] == "runner.hello":
                self._hello(identity, key, _property(frame, "Peer-Address"), envelope)
                session = self._sessions.get(identity)
                continue
            self._resume(session)
            self._dispatch(session, envelope)

    def _unpark(self, identity: bytes, key: bytes) -> RemoteRunner | None:
        """A parked runner's session again, if its key is its own and still live."""
        runner = self._parked.get(identity)
        if runner is None or runner.credential.public != key or self._store.lookup(key) is None:
            return None
        del self._parked[identity]
        self._sessions[identity] = runner
        runner.state = RemoteState.LOST  # _resume brings it back, tools and all
        return runner

    def _hello(self, identity: bytes, key: bytes, address: str, envelope: wire.Envelope) -> None:
        if envelope["method"] != "runner.hello" or envelope["kind"] != "request":
            if identity in self._strangers or len(self._strangers) > _MAX_PARKED:
                return  # said once already: a cut-off runner keeps beating
            self._strangers.add(identity)
            log.warning(
                "rejected %s from a remote runner that has not said hello", envelope["method"]
            )
            return
        body = envelope["body"] if isinstance(envelope["body"], dict) else {}
        existing = self._sessions.get(identity)
        if existing is not None:  # a hello repeated while the link was down: same answer
            self._post(identity, wire.response(envelope, self._welcome(existing)))
            return
        credential = self._store.lookup(key)
        if credential is None:
            self._refuse(
                identity, envelope, "unauthorized", "this runner's key is unknown or revoked"
            )
            return
        if body.get("protocol") != wire.PROTOCOL_VERSION:
            message = (
                f"runner speaks protocol {body.get('protocol')!r}, host speaks "
                f"{wire.PROTOCOL_VERSION}; install matching plughost and plughost-runner"
            )
            self._refuse(identity, envelope, "protocol_mismatch", message, credential)
            return
        accepted = self._check_offers(credential, body.get("offers"))
        if not accepted:
            message = (
                f"no plugin this runner offers may be served with credential {credential.name}"
            )
            self._refuse(identity, envelope, "unauthorized", message, credential)
            return
        runner = RemoteRunner(self, identity, credential, body, accepted, address or "unknown")
        # Logged under the credential's name, not a name the runner chose (loggers live forever).
        runner.output = RunnerOutput(
            f"remote.{credential.name}",
            accepted,
            self._redact,
            lines_per_second=self._settings.runner.output_lines_per_second,
        )
        self._sessions[identity] = runner
        log.info(
            "remote runner %s joined from %s with credential %s: %s",
            runner.runner_id,
            runner.address,
            credential.name,
            ", ".join(f"{p} {v}" for p, v in sorted(accepted.items())),
        )
        self._post(identity, wire.response(envelope, self._welcome(runner)))

    def _check_offers(self, credential: ClientCredential, offers: Any) -> dict[str, str]:
        accepted: dict[str, str] = {}
        for offer in offers if isinstance(offers, list) else []:
            if not isinstance(offer, dict):
                continue
            plugin_id, version = str(offer.get("plugin_id", "")), str(offer.get("version", ""))
            reason = credential.refusal(plugin_id, version)
            if reason is None and self._is_local(plugin_id):
                reason = f"plugin {plugin_id} is served by this host's own runners"
            if reason is not None:
                log.warning(
                    "refused plugin %s offered by credential %s: %s",
                    plugin_id,
                    credential.name,
                    reason,
                )
                continue
            accepted[plugin_id] = version
        return accepted

    def _welcome(self, runner: RemoteRunner) -> dict[str, Any]:
        runner_settings = self._settings.runner
        return {
            "accepted": runner.plugin_ids,
            "heartbeat_interval": runner_settings.heartbeat_interval,
            "max_message_bytes": runner_settings.max_message_bytes,
            "log_level": logging.getLevelName(runner_settings.log_level),
            "limits": runner_settings.limits.model_dump(exclude_none=True),
        }

    def _refuse(
        self,
        identity: bytes,
        envelope: wire.Envelope,
        code: wire.ErrorCode,
        message: str,
        credential: ClientCredential | None = None,
    ) -> None:
        who = f"credential {credential.name}" if credential else "a remote runner"
        log.warning("refused %s: %s", who, message)
        self._post(identity, wire.response(envelope, error=wire.error_body(code, message)))

    def _dispatch(self, runner: RemoteRunner, envelope: wire.Envelope) -> None:
        kind, method = envelope["kind"], envelope["method"]
        if kind == "response":
            future = runner.pending.get(envelope["id"])
            if future is None or future.done():
                return
            error = envelope["error"]
            if error is None:
                future.set_result(envelope["body"])
            elif isinstance(error, dict) and isinstance(error.get("code"), str):
                future.set_exception(RemoteError(error))
            else:
                future.set_exception(
                    ProtocolError(f"malformed error from the runner: {error!r:.200}")
                )
        elif kind == "request" and method == "runner.ready":
            self._ready(runner, envelope)
        elif kind == "request":
            message = "a remote runner's plugins get no host capabilities"
            self._post(
                runner.identity,
                wire.response(envelope, error=wire.error_body("capability_denied", message)),
            )
        elif method == "log.batch" and runner.output is not None:
            runner.output.forward_records((envelope["body"] or {}).get("records"))

    def _ready(self, runner: RemoteRunner, envelope: wire.Envelope) -> None:
        report = envelope["body"] if isinstance(envelope["body"], dict) else {}
        # Believed only for the plugins this host accepted from it.
        loaded = [
            p
            for p in report.get("loaded", [])
            if isinstance(p, dict) and p.get("plugin_id") in runner.accepted
        ]
        failed = [
            p
            for p in report.get("failed", [])
            if isinstance(p, dict) and p.get("plugin_id") in runner.accepted
        ]
        runner.report = {"loaded": loaded, "failed": failed}
        for problem in failed:
            log.warning(
                "remote runner %s could not load %s: %s",
                runner.runner_id,
                problem.get("plugin_id"),
                self._redact(str(problem.get("reason", ""))),
            )
        runner.state = RemoteState.READY
        self._post(runner.identity, wire.response(envelope, {"ok": True}))
        self._on_join(runner)

    def _resume(self, runner: RemoteRunner) -> None:
        runner.last_beat = asyncio.get_running_loop().time()
        if runner.state is RemoteState.LOST:
            runner.state = RemoteState.READY
            runner.lost_since = None
            log.info("remote runner %s is back (%s)", runner.runner_id, runner.address)
            self._on_join(runner)

    async def _watch(self) -> None:
        """Notice silent runners, end their sessions after the grace, and apply revocations."""
        runner_settings = self._settings.runner
        interval = runner_settings.heartbeat_interval
        silence = interval * runner_settings.heartbeat_misses
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(min(interval, 0.5))  # a periodic tick, not synchronization
            now = loop.time()
            live = {c.public: c for c in self._store.credentials()}
            for runner in list(self._sessions.values()):
                if live.get(runner.credential.public) is None:
                    log.warning(
                        "remote runner %s: credential %s was revoked; its session ends now",
                        runner.runner_id,
                        runner.credential.name,
                    )
                    self._end(runner, f"credential {runner.credential.name} was revoked")
                    # Tell it to stop: it would be refused at its next connection anyway.
                    self._post(runner.identity, wire.request(0, "runner.shutdown", {"drain": 0}))
                elif runner.state is RemoteState.READY and now - runner.last_beat > silence:
                    runner.state = RemoteState.LOST
                    runner.lost_since = now
                    reason = f"remote runner {runner.runner_id} fell silent for {silence:g} s"
                    log.warning("%s (%s)", reason, runner.address)
                    runner.fail_all(reason)
                    self._on_silent(runner, reason)
                elif (
                    runner.state is RemoteState.LOST
                    and runner.lost_since is not None
                    and now - runner.lost_since > self._settings.remote.grace
                ):
                    self._end(runner, f"remote runner {runner.runner_id} did not come back")
                    self._park(runner)

    def _park(self, runner: RemoteRunner) -> None:
        self._parked[runner.identity] = runner
        while len(self._parked) > _MAX_PARKED:
            del self._parked[next(iter(self._parked))]

    def _end(self, runner: RemoteRunner, reason: str) -> None:
        self._sessions.pop(runner.identity, None)
        runner.state = RemoteState.STOPPED
        runner.fail_all(reason)
        self._on_leave(runner, reason)

    async def request(
        self,
        runner: RemoteRunner,
        method: wire.Method,
        body: dict[str, Any],
        plugin_id: str,
        timeout: float,
    ) -> Any:
        """Send a request to ``runner`` and wait for its reply body.

        Raises:
            RemoteError, TimeoutError, RunnerCrashedError.
        """
        if self._pump is None:
            raise RunnerCrashedError("the host is not listening for remote runners")
        self._next_id += 1
        request_id = self._next_id
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        runner.pending[request_id] = future
        envelope = wire.request(
            request_id, method, body, plugin=plugin_id, deadline_ms=max(1, int(timeout * 1000))
        )
        sent = False
        try:
            try:
                await self._pump.send((runner.identity, *wire.encode_parts(envelope)))
            except zmq.ZMQError as exc:
                raise RunnerCrashedError(
                    f"cannot reach remote runner {runner.runner_id}: {exc}"
                ) from exc
            sent = True
            async with asyncio.timeout(timeout):
                return await future
        except (TimeoutError, asyncio.CancelledError):
            if sent:
                cancel = wire.event("call.cancel", {"id": request_id})
                self._post(runner.identity, cancel)
            raise
        finally:
            runner.pending.pop(request_id, None)

    def _post(self, identity: bytes, envelope: wire.Envelope) -> None:
        if self._pump is not None:
            self._pump.post((identity, wire.encode(envelope)))

    def _send_failed(self, exc: zmq.ZMQError) -> None:
        log.debug("a message to a remote runner did not go out: %s", exc)

    async def aclose(self) -> None:
        """End every session (their calls fail) and close the socket."""
        for runner in list(self._sessions.values()):
            self._sessions.pop(runner.identity, None)
            runner.state = RemoteState.STOPPED
            runner.fail_all("the host is shutting down")
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, zmq.ZMQError):
                await task
        if self._pump is not None:
            self._pump.detach()
        if self._sock is not None:
            self._sock.close(linger=0)
        if self._auth is not None:
            self._auth.stop()
        if self._context is not None:
            self._context.destroy(linger=0)


def _property(frame: zmq.Frame, name: str) -> str:
    """A metadata property of a received frame (``User-Id``, ``Peer-Address``), or ''."""
    try:
        value = frame.get(name)
    except zmq.ZMQError:
        return ""
    return value if isinstance(value, str) else ""
