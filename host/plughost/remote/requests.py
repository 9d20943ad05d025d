"""What a remote runner asks of the host: ready, capability calls, new versions of its plugins.

:class:`~plughost.remote.listener.RemoteListener` hands every request of a
session here. Each is answered once, and believed only within what the host
accepted from that runner:

- ``runner.ready``: the load report, kept only for accepted plugins, and only
  within the declaration bounds every runner gets and, for a pinned copy,
  what it declared when pinned (:func:`_believed`).
- ``capability.call``: through the host's capability router, the same code a
  local plugin's call goes through, with the plugin's manifest capabilities cut
  down to what the runner's credential grants
  (:class:`~plughost.remote.member.RemotePlugin`). ``ctx.call_tool``
  then meets ``[host.tool_grants]`` like any plugin's.
- ``plugin.offer``: a new version of a plugin the runner serves (its folder
  was edited there), or a plugin it does not serve yet (a folder added there),
  checked against the credential's allow-list (version and manifest pin)
  before the runner loads any of its code. A new plugin refused is logged with
  the same line as a refusal at the hello.
- ``plugin.reloaded``: the offered version loaded (its tools replace the old
  ones, or a new plugin joins its pool) or failed (the old version keeps
  serving; the reason is logged and kept for ``host.status()``).
- ``plugin.removed``: the plugin's folder is gone there. The runner leaves the
  plugin's pool before the answer goes out, so no call follows it; the calls in
  flight keep their capabilities until they finish.
- ``runner.draining``: the runner got a SIGTERM and is leaving. It gets no new
  call from now on (its pools pick other members), and answers those in flight;
  its ``runner.drained`` event then ends the session
  (:class:`~plughost.remote.listener.RemoteListener`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from plughost.remote.member import Offer, RemoteRunner, RemoteState
from plughost.runners.capabilities import CapabilityRouter
from plughost.runners.channel import RemoteError
from plughost.runners.reports import bound_declarations, declared_names
from plughost_sdk import wire

__all__ = ["ReloadCallback", "RemoveCallback", "RunnerRequests"]

log = logging.getLogger("plughost.remote.listener")

RELOAD_FAILED = "; the old version keeps serving"
Post = Callable[[bytes, wire.Envelope], None]
ReloadCallback = Callable[[RemoteRunner, dict[str, Any]], None]
"""Called with a runner and its ``plugin.reloaded`` report (loaded, failed), checked."""
RemoveCallback = Callable[[RemoteRunner, str], None]
"""Called with a runner and a plugin it no longer serves (its folder was removed)."""


class RunnerRequests:
    """Answers the requests of remote runners."""

    def __init__(
        self,
        post: Post,
        check_offer: Callable[[RemoteRunner, Offer], str | None],
        *,
        capabilities: CapabilityRouter | None,
        on_join: Callable[[RemoteRunner], None],
        on_reload: ReloadCallback,
        on_remove: RemoveCallback,
        redact: Callable[[str], str],
    ) -> None:
        self._post = post
        self._check_offer = check_offer
        self._capabilities = capabilities
        self._on_join = on_join
        self._on_reload = on_reload
        self._on_remove = on_remove
        self._redact = redact
        self._calls: set[asyncio.Task[None]] = set()  # capability calls being answered

    def handle(self, runner: RemoteRunner, envelope: wire.Envelope) -> None:
        """Answer one request of ``runner`` (capability calls in a task of their own)."""
        method = envelope["method"]
        if method == "runner.ready":
            body = envelope["body"]
            loaded, refused = _believed(
                runner, _entries(body, "loaded", runner.offers), runner.offers
            )
            failed = [*_entries(body, "failed", runner.offers), *refused]
            runner.report = {"loaded": loaded, "failed": failed}
            self._log_failures(runner, failed, "could not load")
            runner.state = RemoteState.READY
            self._answer(runner, envelope, {"ok": True})
            self._on_join(runner)
        elif method == "capability.call":
            task = asyncio.create_task(self._capability_call(runner, envelope))
            self._calls.add(task)
            task.add_done_callback(self._calls.discard)
        elif method == "plugin.offer":
            self._offer(runner, envelope)
        elif method == "plugin.reloaded":
            self._reloaded(runner, envelope)
        elif method == "runner.draining":
            self._draining(runner, envelope)
        elif method == "plugin.removed":
            self._removed(runner, envelope)
        else:
            self._refuse(runner, envelope, "bad_payload", f"a runner does not send {method!r}")

    async def aclose(self) -> None:
        """Cancel the capability calls still being answered."""
        for task in list(self._calls):
            task.cancel()
        await asyncio.gather(*self._calls, return_exceptions=True)

    async def _capability_call(self, runner: RemoteRunner, envelope: wire.Envelope) -> None:
        plugin_id, body = envelope["plugin"], envelope["body"]
        caller = runner.grants(plugin_id) if isinstance(plugin_id, str) else None
        if self._capabilities is None or caller is None:
            message = f"plugin {plugin_id!r} may not call the host from this runner"
            self._refuse(runner, envelope, "capability_denied", message)
            return
        if not isinstance(body, dict) or not isinstance(body.get("args", {}), dict):
            self._refuse(runner, envelope, "bad_payload", "capability call without a map")
            return
        call = body.get("call")
        serving = runner.serving.get(call) if type(call) is int else None
        live = serving is not None and serving[0] == caller.id
        try:
            reply = await self._capabilities.dispatch(
                caller,
                str(body.get("capability", "")),
                dict(body.get("args") or {}),
                serving=live,
                client=serving[1] if live and serving is not None else None,
                denial=caller.denial,
            )
        except RemoteError as exc:
            self._post(runner.identity, wire.response(envelope, error=exc.error))
            return
        self._answer(runner, envelope, reply)

    def _offer(self, runner: RemoteRunner, envelope: wire.Envelope) -> None:
        offer = Offer.from_wire((envelope["body"] or {}).get("offer"))
        if offer is None:
            self._refuse(runner, envelope, "bad_payload", "plugin.offer without an offer")
            return
        reason = self._check_offer(runner, offer)
        if reason is not None:
            self._refuse_offer(runner, offer, reason)
            self._refuse(runner, envelope, "unauthorized", reason)
            return
        runner.reloading[offer.plugin_id] = offer
        self._answer(runner, envelope, {"accepted": True})

    def _refuse_offer(self, runner: RemoteRunner, offer: Offer, reason: str) -> None:
        if offer.plugin_id not in runner.offers:  # a new folder: logged as at the hello
            log.warning(
                "refused plugin %s offered by credential %s: %s",
                offer.plugin_id,
                runner.credential.name,
                reason,
            )
            return
        log.warning(
            "refused the new version of plugin %s offered by remote runner %s (credential "
            "%s): %s%s",
            offer.plugin_id,
            runner.runner_id,
            runner.credential.name,
            reason,
            RELOAD_FAILED,
        )
        failure = {"plugin_id": offer.plugin_id, "stage": "allow-list", "reason": reason}
        self._on_reload(runner, {"loaded": [], "failed": [failure]})

    def _reloaded(self, runner: RemoteRunner, envelope: wire.Envelope) -> None:
        # New tools only for an accepted offer; a failure for any plugin it serves or
        # was accepted (a manifest that does not parse is never offered).
        body = envelope["body"]
        loaded, refused = _believed(
            runner, _entries(body, "loaded", runner.reloading), runner.reloading
        )
        failed = [*_entries(body, "failed", {**runner.offers, **runner.reloading}), *refused]
        report = {
            "loaded": loaded,
            "failed": [p for p in failed if p["plugin_id"] in runner.offers],
        }
        for entry in loaded:
            plugin_id = entry["plugin_id"]
            runner.offers[plugin_id] = runner.reloading.pop(plugin_id)
            runner.retiring.pop(plugin_id, None)
            if runner.output is not None:
                runner.output.allow(plugin_id)
        for problem in failed:
            runner.reloading.pop(str(problem["plugin_id"]), None)
        self._log_failures(runner, report["failed"], "could not reload", RELOAD_FAILED)
        added = [p for p in failed if p not in report["failed"]]
        self._log_failures(runner, added, "could not load the new plugin")
        self._answer(runner, envelope, {"ok": True})
        self._on_reload(runner, report)

    def _removed(self, runner: RemoteRunner, envelope: wire.Envelope) -> None:
        plugin_id = (envelope["body"] or {}).get("plugin_id")
        offer = runner.offers.pop(plugin_id, None) if isinstance(plugin_id, str) else None
        if offer is not None and isinstance(plugin_id, str):
            runner.retiring[plugin_id] = offer  # for the capability calls of calls in flight
            runner.reloading.pop(plugin_id, None)
            runner.report["loaded"] = [
                p for p in runner.report["loaded"] if p.get("plugin_id") != plugin_id
            ]
            log.info(
                "remote runner %s no longer serves %s: its folder was removed there",
                runner.runner_id,
                plugin_id,
            )
            self._on_remove(runner, plugin_id)
        self._answer(runner, envelope, {"ok": True})

    def _draining(self, runner: RemoteRunner, envelope: wire.Envelope) -> None:
        if runner.state in (RemoteState.STARTING, RemoteState.READY, RemoteState.LOST):
            runner.state = RemoteState.DRAINING
        body = envelope["body"] if isinstance(envelope["body"], dict) else {}
        timeout = body.get("drain_timeout")
        log.info(
            "remote runner %s is leaving: no new calls go to it; its %d calls in flight may "
            "finish within %s s",
            runner.runner_id,
            runner.inflight,
            f"{timeout:g}" if isinstance(timeout, int | float) else "?",
        )
        self._answer(runner, envelope, {"ok": True})

    def _log_failures(
        self, runner: RemoteRunner, failed: list[dict[str, Any]], what: str, then: str = ""
    ) -> None:
        for problem in failed:
            log.warning(
                "remote runner %s %s %s (%s): %s%s",
                runner.runner_id,
                what,
                problem.get("plugin_id"),
                self._redact(str(problem.get("file") or problem.get("path") or "?")),
                self._redact(str(problem.get("reason", ""))),
                then,
            )

    def _answer(self, runner: RemoteRunner, envelope: wire.Envelope, body: Any) -> None:
        self._post(runner.identity, wire.response(envelope, body))

    def _refuse(
        self, runner: RemoteRunner, envelope: wire.Envelope, code: wire.ErrorCode, message: str
    ) -> None:
        self._post(runner.identity, wire.response(envelope, error=wire.error_body(code, message)))


def _entries(body: Any, key: str, allowed: dict[str, Offer]) -> list[dict[str, Any]]:
    """The ``key`` entries (``loaded``, ``failed``) of a load report, of plugins in ``allowed``."""
    found = body.get(key) if isinstance(body, dict) else None
    return [
        p
        for p in (found if isinstance(found, list) else [])
        if isinstance(p, dict) and isinstance(p.get("plugin_id"), str) and p["plugin_id"] in allowed
    ]


def _believed(
    runner: RemoteRunner, loaded: list[dict[str, Any]], offers: dict[str, Offer]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split loaded entries into those the host registers and failures for the rest.

    First the bounds every runner's declarations get, local or remote
    (:func:`~plughost.runners.reports.bound_declarations`); then, for a plugin
    whose offered digest the credential pinned from a folder, what that copy
    declared: a remote runner says which digest it serves, but the names it
    declares are what the host can check itself.
    """
    kept, refused = bound_declarations(loaded)
    believed = []
    for entry in kept:
        plugin_id = entry["plugin_id"]
        extra = runner.credential.undeclared(offers[plugin_id].plugin_sha256, declared_names(entry))
        if not extra:
            believed.append(entry)
            continue
        shown = ", ".join(extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
        reason = (
            f"declares {shown}, which the copy of {plugin_id} pinned by credential "
            f"{runner.credential.name} does not declare; nothing of it is registered (pin the "
            "new version: plughost runner-credentials new ... --pin FOLDER)"
        )
        refused.append({"plugin_id": plugin_id, "stage": "pin", "reason": reason})
    return believed, refused
