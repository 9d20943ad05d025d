"""Runners on other machines: one CurveZMQ ROUTER socket the host listens on.

A remote runner (``plughost-runner --connect``) authenticates with the key of a
credential the operator issued (:mod:`plughost.remote.keys`): ZAP
admits only keys of live credentials, and every message is checked again
against the key its session started with. Its ``runner.hello`` offers plugins
(id, version); the host accepts only those on the credential's allow-list (and
not claimed by this host's own plugin folders), and later believes the runner's
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

A runner that is stopped (SIGTERM) says so first (``runner.draining``): no new
call goes to it, its calls in flight are answered, and its ``runner.drained``
event ends its session at once, with no grace period; frames it sends after
that are dropped. One that falls silent while draining is ended at once too.

A remote plugin's ``capability.call`` goes through the host's capability
router like a local plugin's, but may reach only what its manifest asks *and*
its credential grants (``--grant``): the manifest of a remote plugin is only
what the runner says it is, so the operator's grant is what counts.

Hot reload on the runner's side: the runner offers the new version of a
plugin, or a plugin of a folder added there (``plugin.offer``), which is
checked against the allow-list like an offer of the hello, and then reports it
loaded, or why not (``plugin.reloaded``, shaped like ``runner.ready``); a
folder removed there is reported with ``plugin.removed``; see
:mod:`plughost.remote.requests`.

A host that restarts knows none of the runners of its previous life: it
answers a stranger (a key it admits, an identity with no session) with
``runner.rejoin``, and the runner says hello again with the plugins it serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import zmq
import zmq.asyncio
from zmq.auth.asyncio import AsyncioAuthenticator

from plughost.redaction import SecretRedactor, unchanged
from plughost.remote.keys import ClientCredential, RemoteKeyStore
from plughost.remote.member import Offer, RemoteRunner, RemoteState
from plughost.remote.requests import ReloadCallback, RemoveCallback, RunnerRequests
from plughost.runners.capabilities import CapabilityRouter
from plughost.runners.channel import RemoteError
from plughost.runners.output import RunnerOutput
from plughost.settings import HostSettings
from plughost.tools.client_link import current_client
from plughost_sdk import wire
from plughost_sdk.errors import ProtocolError, RunnerCrashedError
from plughost_sdk.socket_pump import SocketPump

__all__ = ["RemoteListener"]

log = logging.getLogger(__name__)

ZAP_DOMAIN = "plughost-remote"
_MAX_PARTS = 2 + wire.MAX_BLOBS
_MAX_PARKED = 1000
"""Runners past their grace remembered for a return; the oldest is forgotten first."""
_REJOIN_EVERY = 1.0
_DEPARTED = "remote runner {} drained its calls and left"
"""Seconds between two ``runner.rejoin`` to one stranger (it beats more often than that)."""


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
        on_reload: ReloadCallback = lambda runner, report: None,
        on_remove: RemoveCallback = lambda runner, plugin_id: None,
        capabilities: CapabilityRouter | None = None,
        redactor: SecretRedactor | None = None,
        local_claim: Callable[[str], str | None] = lambda _: None,
    ) -> None:
        self._settings = settings
        self._store = store
        self._on_join, self._on_silent, self._on_leave = on_join, on_silent, on_leave
        self._redact = redactor.redact if redactor is not None else unchanged
        self._local_claim = local_claim  # why a plugin id is this host's own, if it is
        self._requests = RunnerRequests(
            self._post,
            lambda runner, offer: self._refusal(runner.credential.public, offer),
            capabilities=capabilities,
            on_join=on_join,
            on_reload=on_reload,
            on_remove=on_remove,
            redact=self._redact,
        )
        self._sessions: dict[bytes, RemoteRunner] = {}
        # Runners whose grace ran out, by identity: one that comes back resumes its session.
        self._parked: dict[bytes, RemoteRunner] = {}
        # Identities with no session, and when each was last told to say hello again.
        self._strangers: dict[bytes, float] = {}
        # Identities that drained and left: their last frames are not a stranger's.
        self._departed: dict[bytes, None] = {}
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
        if identity in self._departed:
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
            try:
                self._dispatch(session, envelope)
            except Exception as exc:  # a bad message costs its runner's session, not the listener
                self._violation(session, f"a malformed {envelope['method']} ({exc!r:.200})")
                return

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
            self._stranger(identity, key, envelope)
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
        self._strangers.pop(identity, None)
        log.info(
            "remote runner %s joined from %s with credential %s: %s",
            runner.runner_id,
            runner.address,
            credential.name,
            ", ".join(f"{p} {o.version}" for p, o in sorted(accepted.items())),
        )
        self._post(identity, wire.response(envelope, self._welcome(runner)))

    def _stranger(self, identity: bytes, key: bytes, envelope: wire.Envelope) -> None:
        """A message from a runner this host has no session with: ask it to say hello again.

        It is a runner of a previous life of this host (or one whose hello was lost):
        its key passed ZAP, so it holds a live credential. Said at most once a second.
        """
        now = asyncio.get_running_loop().time()
        if now - self._strangers.get(identity, -_REJOIN_EVERY) < _REJOIN_EVERY:
            return
        credential = self._store.lookup(key)
        if credential is None:  # revoked while connected: it was told to stop
            self._strangers[identity] = now
            return
        if identity not in self._strangers:
            log.info(
                "asked a remote runner of credential %s that sent %s without a session to "
                "say hello again (runner.rejoin)",
                credential.name,
                envelope["method"],
            )
        self._strangers[identity] = now
        while len(self._strangers) > _MAX_PARKED:
            del self._strangers[next(iter(self._strangers))]
        self._post(identity, wire.event("runner.rejoin", {"reason": "unknown session"}))

    def _check_offers(self, credential: ClientCredential, offers: Any) -> dict[str, Offer]:
        accepted: dict[str, Offer] = {}
        for item in offers if isinstance(offers, list) else []:
            offer = Offer.from_wire(item)
            if offer is None:
                continue
            reason = self._refusal(credential.public, offer)
            if reason is not None:
                log.warning(
                    "refused plugin %s offered by credential %s: %s",
                    offer.plugin_id,
                    credential.name,
                    reason,
                )
                continue
            accepted[offer.plugin_id] = offer
        return accepted

    def _refusal(self, key: bytes, offer: Offer) -> str | None:
        """Why the credential of ``key`` (as it is on disk now) may not serve ``offer``."""
        credential = self._store.lookup(key)
        if credential is None:
            return "the credential was revoked"
        reason = credential.refusal(
            offer.plugin_id, offer.version, offer.plugin_sha256, offer.digest_problem
        )
        return reason if reason is not None else self._local_claim(offer.plugin_id)

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
        elif kind == "request":
            self._requests.handle(runner, envelope)
        elif method == "log.batch" and runner.output is not None:
            runner.output.forward_records((envelope["body"] or {}).get("records"))
        elif method == "runner.drained":
            self._depart(runner)

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
                elif runner.state is RemoteState.DRAINING and now - runner.last_beat > silence:
                    reason = f"remote runner {runner.runner_id} fell silent while leaving"
                    log.warning("%s (%s)", reason, runner.address)
                    self._end(runner, reason)
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

    def _depart(self, runner: RemoteRunner) -> None:
        """A runner that drained: out of its pools now, and its identity not resumed."""
        reason = _DEPARTED.format(runner.runner_id)
        log.info("%s (%s)", reason, runner.address)
        self._end(runner, reason)
        self._ignore(runner.identity)

    def _violation(self, runner: RemoteRunner, what: str) -> None:
        """End a runner that broke the protocol, as a local one is recycled for it.

        Its session ends (calls in flight fail, its pools lose it), its frames are
        ignored from now on, and it is told to stop; the process that replaces it
        joins afresh.
        """
        log.warning(
            "remote runner %s broke the protocol with %s: its session ends and it is told to stop",
            runner.runner_id,
            what,
        )
        self._end(runner, f"remote runner {runner.runner_id} broke the protocol")
        self._ignore(runner.identity)
        self._post(runner.identity, wire.request(0, "runner.shutdown", {"drain": 0}))

    def _ignore(self, identity: bytes) -> None:
        """Drop this identity's frames from now on (the most recent few are remembered)."""
        self._departed[identity] = None
        while len(self._departed) > _MAX_PARKED:
            del self._departed[next(iter(self._departed))]

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
        runner.serving[request_id] = (plugin_id, current_client.get())
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
            runner.serving.pop(request_id, None)

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
        await self._requests.aclose()
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
