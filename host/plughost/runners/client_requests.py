"""Capabilities answered by the client of the call being served: models, users, subscribers.

``ctx.llm.generate`` (``llm.generate``) and ``ctx.elicit`` (``user.elicit``) go to
the client behind the call the plugin is serving (:mod:`plughost.tools.client_link`):
under ``plughost serve``, the MCP client, through ``sampling/createMessage`` and
``elicitation/create``; the user is shown which plugin asks (the one the host
bound the call to), before what it asks. A call with no such client (an embedder's own
:meth:`PluginHost.invoke`, or a client that did not offer the capability) gets
``capability_not_provided`` with a message that says why. An embedder that has
a model of its own registers its own ``llm.generate`` handler instead.

``ctx.resource_updated(uri)`` (``resources.updated``) tells the registry's
resource listeners (MCP subscribers) that one of the plugin's own resources changed.
"""

from __future__ import annotations

from collections.abc import Callable

from plughost.runners.capabilities import CapabilityCall
from plughost.runners.channel import RemoteError
from plughost.tools.client_link import ClientRequestError
from plughost_sdk import wire
from plughost_sdk.context import LLM_GENERATE, USER_ELICIT

__all__ = ["ResourceUpdates", "elicit", "generate"]


async def generate(call: CapabilityCall) -> dict[str, object]:
    """Answer ``llm.generate`` through the calling client's sampling."""
    if call.client is None:
        raise _not_provided(
            f"{LLM_GENERATE}: no model can answer here: this call did not come from an MCP "
            "client (which could answer through sampling), and the host has no llm.generate "
            "handler of its own"
        )
    try:
        return await call.client.generate(dict(call.args))
    except ClientRequestError as exc:
        raise _not_provided(f"{LLM_GENERATE}: {exc}") from None


async def elicit(call: CapabilityCall) -> dict[str, object]:
    """Answer ``user.elicit`` through the calling client's elicitation."""
    if call.client is None:
        raise _not_provided(
            f"{USER_ELICIT}: there is no user to ask: this call did not come from an MCP client"
        )
    message = str(call.args.get("message", ""))
    schema = call.args.get("schema")
    if not isinstance(schema, dict):
        raise ValueError("user.elicit needs 'schema', a JSON Schema object")
    try:
        return await call.client.elicit(f"plugin {call.plugin_id}", message, schema)
    except ClientRequestError as exc:
        raise _not_provided(f"{USER_ELICIT}: {exc}") from None


class ResourceUpdates:
    """Answers ``resources.updated`` for a plugin's own resources."""

    def __init__(self, owns: Callable[[str, str], bool], notify: Callable[[str], None]) -> None:
        """``owns(plugin_id, uri)`` checks the URI; ``notify(uri)`` tells the listeners."""
        self._owns = owns
        self._notify = notify

    async def __call__(self, call: CapabilityCall) -> None:
        """Tell subscribers ``uri`` changed, if the calling plugin serves it."""
        uri = str(call.args.get("uri", ""))
        if not self._owns(call.plugin_id, uri):
            raise RemoteError(
                wire.error_body(
                    "capability_denied",
                    f"plugin {call.plugin_id} does not serve the resource {uri!r}; it can "
                    "announce changes only to its own @Resource URIs",
                )
            )
        self._notify(uri)


def _not_provided(message: str) -> RemoteError:
    return RemoteError(wire.error_body("capability_not_provided", message))
