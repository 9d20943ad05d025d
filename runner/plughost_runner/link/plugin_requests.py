"""The host's requests to a plugin besides calls: resources, prompts, configuration.

``resource.read`` and ``prompt.get`` run the plugin's handler under the
request's deadline, and shape what it returns into MCP's contents and
messages; a handler that fails or overstays is a wire error naming the resource
or prompt. ``config.update`` validates new configuration, swaps it in and runs
``on_config_update``, restoring the old configuration if that raises; a MaiBot
plugin follows MaiBot's rules (its own scope renormalized against its schema,
bot and model scopes only to the plugins that subscribe).

Kept out of :mod:`plughost_runner.service`, whose tool-call path runs none of
it; the service's request loop dispatches here through its handler table.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from plughost_runner.link.replies import Reply
from plughost_runner.maibot import imports as maibot_imports
from plughost_runner.plugins.invoker import Handler, Invoker
from plughost_runner.plugins.loader import LoadedPlugin, validate_config
from plughost_sdk import wire
from plughost_sdk.resources import match_template, prompt_messages, resource_contents

if TYPE_CHECKING:
    from plughost_sdk.maibot.plugin import MaiBotPlugin

__all__ = ["PluginRequests"]

log = logging.getLogger("plughost_runner")


class PluginRequests:
    """The runner service's handlers of ``resource.read``, ``prompt.get`` and ``config.update``."""

    _invoker: Invoker

    if TYPE_CHECKING:

        def _plugin(self, envelope: wire.Envelope) -> LoadedPlugin: ...

    async def _on_read_resource(self, envelope: wire.Envelope) -> Any:
        plugin = self._plugin(envelope)
        body = envelope["body"] or {}
        uri, key = str(body.get("uri", "")), str(body.get("resource", ""))
        handler = plugin.resources.get(key)
        variables = match_template(key, uri) if handler is not None else None
        if handler is None or variables is None:
            missing = f"plugin {plugin.spec.plugin_id} has no resource {uri!r}"
            raise Reply("tool_not_found", missing)
        value = await self._run(plugin, handler, dict(variables), envelope, f"resource {uri}")
        mime_type = getattr(handler.declaration, "mime_type", None)
        try:
            return {"contents": resource_contents(uri, mime_type, value)}
        except ValueError as exc:
            raise Reply("bad_payload", f"resource {uri}: {exc}") from None

    async def _on_get_prompt(self, envelope: wire.Envelope) -> Any:
        plugin = self._plugin(envelope)
        body = envelope["body"] or {}
        name = str(body.get("prompt", ""))
        handler = plugin.prompts.get(name)
        if handler is None:
            raise Reply("tool_not_found", f"plugin {plugin.spec.plugin_id} has no prompt {name!r}")
        arguments = {str(k): str(v) for k, v in dict(body.get("arguments") or {}).items()}
        value = await self._run(plugin, handler, arguments, envelope, f"prompt {name}")
        try:
            return {"messages": prompt_messages(value)}
        except ValueError as exc:
            raise Reply("bad_payload", f"prompt {name}: {exc}") from None

    async def _run(
        self,
        plugin: LoadedPlugin,
        handler: Handler,
        arguments: dict[str, Any],
        envelope: wire.Envelope,
        what: str,
    ) -> Any:
        """Run a resource or prompt handler; its failure is a wire error naming it."""
        timeout = (envelope["deadline_ms"] or 60_000) / 1000
        try:
            return await self._invoker.call(plugin.spec.plugin_id, handler, arguments, timeout)
        except TimeoutError:
            raise Reply("timeout", f"{what} did not finish within {timeout:g} s") from None
        except Exception as exc:
            log.warning("plugin %s failed serving %s: %r", plugin.spec.plugin_id, what, exc)
            failure = f"{what} failed: {type(exc).__name__}: {exc}"
            raise Reply("capability_failed", failure) from None

    async def _on_config_update(self, envelope: wire.Envelope) -> Any:
        plugin = self._plugin(envelope)
        body = envelope["body"] or {}
        config, version = dict(body.get("config") or {}), str(body.get("version", ""))
        maibot = maibot_imports.as_maibot_plugin(plugin.instance)
        if maibot is not None:
            return await self._update_maibot_config(plugin, maibot, body)
        if str(body.get("scope", "self")) != "self":
            return {"version": version, "delivered": False}  # bot scopes are MaiBot's
        try:
            validate_config(plugin.instance, config)
        except Exception as exc:
            raise Reply("bad_payload", str(exc)) from None
        ctx_config = plugin.instance.ctx.config
        old, old_version = ctx_config.get_all(), ctx_config.version
        ctx_config._replace(config, version)
        try:
            async with asyncio.timeout(float(body.get("timeout", 10.0))):
                await plugin.instance.on_config_update(
                    str(body.get("scope", "self")), config, version
                )
        except Exception as exc:
            ctx_config._replace(old, old_version)
            raise Reply(
                "internal", f"on_config_update raised {type(exc).__name__}: {exc}"
            ) from None
        return {"version": version}

    async def _update_maibot_config(
        self, plugin: LoadedPlugin, instance: MaiBotPlugin, body: dict[str, Any]
    ) -> Any:
        """MaiBot's rules: the plugin's own scope renormalizes; bot scopes go to subscribers."""
        from plughost_runner.maibot.config import plan_config  # loaded with the plugin already

        config, version = dict(body.get("config") or {}), str(body.get("version", ""))
        scope = str(body.get("scope", "self"))
        previous = instance.get_plugin_config_data()
        if scope == "self":
            try:
                plan = plan_config(instance, plugin.spec.path, config)
            except (ValueError, TypeError) as exc:
                raise Reply("bad_payload", f"config.toml is invalid: {exc}") from None
            if plan.config == previous:
                return {"version": version, "delivered": False}  # e.g. the file plughost wrote
            instance.set_plugin_config(plan.config)
        elif scope not in instance.get_config_reload_subscriptions():
            return {"version": version, "delivered": False}
        try:
            async with asyncio.timeout(float(body.get("timeout", 10.0))):
                await instance.on_config_update(scope, config, version)
        except Exception as exc:
            if scope == "self":
                instance.set_plugin_config(previous)
            raise Reply(
                "internal", f"on_config_update raised {type(exc).__name__}: {exc}"
            ) from None
        return {"version": version, "delivered": True}
