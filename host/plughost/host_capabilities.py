"""The capabilities every host answers for its plugins, whatever the embedder adds.

``tools.call`` (under the operator's grants), the ``api.*`` calls between plugins,
a MaiBot plugin's own configuration, ``llm.*`` (the operator's chosen plugin
provider, else the client's sampling), message gateway plugins'
``host.route_message`` and ``host.update_message_gateway_state`` and the ``send.*``
they carry out, and what is asked of the client behind a call (``user.elicit``,
``resources.updated``). All are fallbacks: the embedder's own handlers
(``send.text``, or an ``llm.*`` of its own) registered with
:meth:`~plughost.host.PluginHost.register_capability` answer first. Kept apart from
:mod:`plughost.host` so the façade's constructor reads as what it builds, not as
the list of what plugins may ask.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from plughost.dispatch.apis import API_CAPABILITIES, REPLACE_DYNAMIC
from plughost.dispatch.gateways import ROUTE_MESSAGE, UPDATE_STATE
from plughost.dispatch.service import ComponentDispatcher
from plughost.runners import client_requests
from plughost.runners.capabilities import CapabilityRouter
from plughost.runners.plugin_config import PLUGIN_CONFIG_CAPABILITIES, PluginConfigCapability
from plughost.runners.tool_calls import TOOLS_CALL, ToolCallCapability
from plughost.settings import HostSettings
from plughost.tools.registry import ToolRegistry
from plughost_sdk.context import RESOURCES_UPDATED, USER_ELICIT

__all__ = ["register_host_capabilities"]


def register_host_capabilities(
    router: CapabilityRouter,
    *,
    tools: ToolRegistry,
    settings: Callable[[], HostSettings],
    dispatcher: ComponentDispatcher,
    plugin_config: Callable[[str], dict[str, Any]],
    owns_resource: Callable[[str, str], bool],
) -> None:
    """Register the host's own capability handlers on ``router``.

    Args:
        router: The host's capability router.
        tools: The registry ``ctx.call_tool`` calls into.
        settings: The host's settings, read at every call so grant changes apply at once.
        dispatcher: Answers the ``api.*`` capabilities.
        plugin_config: A plugin's configuration as the host holds it, by plugin id.
        owns_resource: Whether a plugin serves a resource URI (``resources.updated``).
    """
    router.register(TOOLS_CALL, ToolCallCapability(tools, settings), fallback=True)
    for name in API_CAPABILITIES:
        router.register(name, dispatcher.apis, fallback=True)
    router.register(REPLACE_DYNAMIC, dispatcher.apis, needs_manifest=False, fallback=True)
    # ctx.config.get_plugin/get_all of MaiBot plugins: their own config, as the host holds it.
    own_config = PluginConfigCapability(plugin_config)
    for name in PLUGIN_CONFIG_CAPABILITIES:
        router.register(name, own_config, fallback=True)
    # llm.*: the operator's chosen plugin provider, else (llm.generate) the MCP client's
    # sampling; an embedder's own llm.generate or llm.* handler wins over both.
    router.register("llm.*", dispatcher.llm, fallback=True)
    router.register(USER_ELICIT, client_requests.elicit, fallback=True)
    # Message gateway plugins: their own declared gateways need no manifest entry (as in
    # MaiBot); send.* goes out through a gateway when the embedder answers none.
    gateways = dispatcher.gateways
    router.register(ROUTE_MESSAGE, gateways.route_message, needs_manifest=False, fallback=True)
    router.register(UPDATE_STATE, gateways.update_state, needs_manifest=False, fallback=True)
    router.register("send.*", gateways.send, fallback=True)
    router.register(
        RESOURCES_UPDATED,
        client_requests.ResourceUpdates(owns_resource, tools.notify_resource_updated),
        fallback=True,
    )
