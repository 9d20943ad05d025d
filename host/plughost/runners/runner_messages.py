"""What a local runner and its supervisor say to each other besides calls and their replies.

The runner's hello is answered with what it must load and how
(:meth:`RunnerMessages._hello_reply`); its ``capability.call`` requests go to the
host's :class:`~plughost.runners.capabilities.CapabilityRouter`, and reach the
client behind a call only when the plugin is serving that call; its events
(``runner.heartbeat``, ``log.batch``, ``progress``) feed the watchdog, the host's
logging, and the client and progress receiver of the call they belong to.
Anything no runner of this host sends is a protocol violation, which recycles
the runner process (:meth:`RunnerMessages.protocol_violation`). The other way,
the host delivers new configuration (``config.update``).

Kept out of :mod:`plughost.runners.supervisor`, whose call path runs none of
it; the ``runner.ready`` request (the ready handshake) stays there.
"""

from __future__ import annotations

import logging
import math
from typing import Any, TypeGuard

from plughost.events import EventKind, LifecycleEvent
from plughost.runners.output import MAX_LINE
from plughost.runners.refusals import write_grant
from plughost.runners.reports import ProtocolViolation
from plughost.runners.runner_state import SupervisedRunner
from plughost.runners.watchdog import IDLE_BEATS
from plughost.tools import progress
from plughost.tools.client_link import ClientLink, current_client
from plughost_sdk import wire
from plughost_sdk.errors import RunnerCrashedError

__all__ = ["RunnerMessages"]

log = logging.getLogger("plughost.runners.supervisor")  # one logger for a runner's supervision


class RunnerMessages(SupervisedRunner):
    """The supervisor's answers to the runner's hello, capability calls and events."""

    def _hello_reply(self, hello: dict[str, Any]) -> dict[str, Any]:
        data_root, temp_root = self._roots
        timeout = self._settings.on_load_timeout
        return {
            "plugins": [s.load_spec(data_root, temp_root, timeout) for s in self.sources.values()],
            "heartbeat_interval": self._settings.heartbeat_interval,
            "heartbeat_idle_interval": self._settings.heartbeat_interval * IDLE_BEATS,
            "max_message_bytes": self._settings.max_message_bytes,
            "log_level": logging.getLevelName(self._settings.log_level),
            "limits": self.limits.model_dump(exclude_none=True),
        }

    async def _capability_call(self, envelope: wire.Envelope) -> Any:
        plugin_id, body = envelope["plugin"], envelope["body"]
        source = self.sources.get(plugin_id) if isinstance(plugin_id, str) else None
        if source is None:  # the runner binds the plugin id: only forged frames get here
            raise ProtocolViolation(f"capability call in the name of plugin {plugin_id!r}")
        if not isinstance(body, dict) or not isinstance(body.get("args", {}), dict):
            raise ProtocolViolation("capability call without a map of arguments")
        channel = self._channel
        call = body.get("call")
        serving = (
            channel is not None
            and isinstance(call, int)
            and channel.serving(call, source.plugin_id)
        )
        # Only a call this plugin is serving may reach that call's client.
        client = self._client_of(call) if serving else None
        return await self._capabilities.dispatch(
            source.manifest,
            str(body.get("capability", "")),
            dict(body.get("args") or {}),
            serving=serving,
            client=client,
        )

    def protocol_violation(self, reason: str) -> None:
        """Recycle the current runner process: it sent what no runner of this host sends.

        The process is killed and counted as a crash (so a plugin that keeps doing it
        ends up marked failed); its replacement gets a new token and a new socket.
        """
        violation = self._violation
        if violation is None or violation.done():
            return
        reason = self._redact(reason, self.sources)  # it may quote what the runner sent
        log.warning("runner %s: protocol violation: %s", self.runner_id, reason)
        violation.set_result(f"protocol violation: {reason}")

    async def update_config(
        self, plugin_id: str, config: dict[str, Any], version: str, scope: str = "self"
    ) -> bool:
        """Deliver new configuration to the running plugin (``on_config_update``).

        ``scope`` is ``"self"`` for the plugin's config.toml; ``"bot"`` or ``"model"``
        carry the embedding bot's configuration to MaiBot plugins that subscribe.
        Returns whether ``on_config_update`` ran.

        Raises:
            RemoteError: the plugin rejected it (invalid, or ``on_config_update`` raised).
            RunnerCrashedError: the runner is not running.
            TimeoutError: no answer in time.
        """
        if self._channel is None or not self._ready.is_set():
            raise RunnerCrashedError(f"runner {self.runner_id} is not ready")
        body = {"config": config, "version": version, "scope": scope, "timeout": 10.0}
        reply = await self._channel.request("config.update", body, plugin=plugin_id, timeout=12.0)
        return bool(reply.get("delivered", True)) if isinstance(reply, dict) else True

    def _on_event(self, envelope: wire.Envelope) -> None:
        method, body = envelope["method"], envelope["body"]
        if not isinstance(body, dict):
            return
        if method == "runner.heartbeat":
            self._watchdog.heartbeat(body)
        elif method == "log.batch":
            self._output.forward_records(body.get("records"))
            self._relay_logs(body.get("records"))
            self._note_refusals(body.get("records"))
        elif method == "progress":
            channel = self._channel
            context = channel.context_of(envelope["id"]) if channel is not None else None
            if context is not None:  # None: the call is over, or nobody sent it from here
                context.run(_report_progress, body)

    def _note_refusals(self, records: Any) -> None:
        """Report the paths the sandbox refused (records tagged by the runner: see refusals)."""
        for record in records if isinstance(records, list) else ():
            if not isinstance(record, dict) or "refused" not in record:
                continue
            plugin, path = record.get("plugin"), write_grant(record.get("refused"))
            if plugin not in self.sources or path is None or not self.refusals.note(plugin, path):
                continue
            message = (
                f"sandbox: plugin {plugin} was refused a write under {path}; to allow it, add "
                f'"{path}" to write_grants."{plugin}" in plughost.toml'
            )
            self._events.emit(
                LifecycleEvent(
                    EventKind.SANDBOX_DENIED,
                    message,
                    plugin_id=plugin,
                    runner_id=self.runner_id,
                    details={"path": path, "grant_path": path},
                )
            )

    def _relay_logs(self, records: Any) -> None:
        """Pass the log records of a call to the client that made it (tools.client_link)."""
        for record in records if isinstance(records, list) else ():
            plugin = record.get("plugin") if isinstance(record, dict) else None
            if plugin not in self.sources:
                continue
            client = self._client_of(record.get("call"))
            level = record.get("level")
            if client is not None and type(level) is int:
                message = self._redact(str(record.get("message", ""))[:MAX_LINE], (plugin,))
                client.log(level, f"plugin.{plugin}", message)

    def _client_of(self, call: Any) -> ClientLink | None:
        """The client behind host request ``call`` (tools.client_link), if it is pending."""
        if type(call) is not int or self._channel is None:
            return None
        context = self._channel.context_of(call)
        return context.get(current_client) if context is not None else None


def _report_progress(body: dict[str, Any]) -> None:
    """Hand a runner's progress event to the receiver of the call's context.

    The runner's word is checked first: a progress or total that is not a finite
    number (NaN, infinity, a string) is dropped, since it would reach an MCP client
    as JSON it cannot read, and the message is cut to a log line's length.
    """
    if not progress.wanted():
        return
    done, total, message = body.get("progress"), body.get("total"), body.get("message")
    if not _finite(done) or (total is not None and not _finite(total)):
        return
    progress.report(
        float(done),
        None if total is None else float(total),
        None if message is None else str(message)[:MAX_LINE],
    )


def _finite(value: object) -> TypeGuard[float]:
    """A plain int or float that is finite (a bool is no number here)."""
    return (type(value) is int or type(value) is float) and math.isfinite(value)
