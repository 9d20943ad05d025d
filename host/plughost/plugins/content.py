"""PluginContent: the ``@Resource`` and ``@Prompt`` declarations of loaded plugins, served.

The declarations arrive in each plugin's load report and are kept by the
:class:`~plughost.plugins.components.ComponentRegistry` next to its tools, so a
reload swaps them in the same step. A read or a prompt goes to the runner that
serves the plugin right now (``resource.read``, ``prompt.get``); completions are
answered here from the values the plugin declared, without a round trip.

URIs and prompt names are the plugin's own, unprefixed: a plugin serving
``notes://today`` serves exactly that URI. Two plugins declaring the same URI or
prompt name: the first plugin (by id) keeps it, as the registry does for tools.

What does not live here: the merged view over every provider
(:mod:`plughost.tools.resources`), MCP serving.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal, Protocol, runtime_checkable

from plughost.plugins.components import ComponentRegistry
from plughost.tools.resources import (
    ContentError,
    PromptArgumentInfo,
    PromptInfo,
    PromptMessage,
    PromptResult,
    ResourceContent,
    ResourceInfo,
    complete_from,
)
from plughost_sdk import wire
from plughost_sdk.models import ContentItem
from plughost_sdk.resources import match_template

__all__ = ["ContentReader", "PluginContent"]


@runtime_checkable
class ContentReader(Protocol):
    """What serves a plugin's resources and prompts (a runner supervisor)."""

    async def request_content(
        self, method: wire.Method, plugin_id: str, body: dict[str, Any], timeout: float
    ) -> Any:
        """Send ``resource.read`` or ``prompt.get``; return the reply body."""
        ...


class PluginContent:
    """Lists, reads and fills in the resources and prompts of every loaded plugin."""

    def __init__(self, components: ComponentRegistry, *, timeout: float = 60.0) -> None:
        self._components = components
        self._timeout = timeout

    def _declared(
        self, kind: Literal["resources", "prompts"]
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        key = "uri" if kind == "resources" else "name"
        for plugin_id in self._components.plugins():
            declared = self._components.content(plugin_id).get(kind)
            for declaration in declared if isinstance(declared, list) else ():
                # The runner is not trusted to send well-formed data: skip what is not.
                if isinstance(declaration, dict) and isinstance(declaration.get(key), str):
                    yield plugin_id, declaration

    def list_resources(self) -> list[ResourceInfo]:
        """Every plugin resource and template, plugin by plugin."""
        return [
            ResourceInfo(
                uri=str(d["uri"]),
                name=str(d.get("name") or d["uri"]),
                title=d.get("title"),
                description=str(d.get("description") or ""),
                mime_type=d.get("mime_type"),
                template=bool(d.get("variables")),
            )
            for _, d in self._declared("resources")
        ]

    def list_prompts(self) -> list[PromptInfo]:
        """Every plugin prompt, plugin by plugin."""
        return [
            PromptInfo(
                name=str(d["name"]),
                title=d.get("title"),
                description=str(d.get("description") or ""),
                arguments=tuple(
                    PromptArgumentInfo(
                        str(a["name"]), str(a.get("description") or ""), bool(a.get("required"))
                    )
                    for a in d.get("arguments", ())
                ),
            )
            for _, d in self._declared("prompts")
        ]

    def owns(self, plugin_id: str, uri: str) -> bool:
        """Whether ``uri`` is one of ``plugin_id``'s resources, or fits one of its templates."""
        return any(
            owner == plugin_id and match_template(str(d["uri"]), uri) is not None
            for owner, d in self._declared("resources")
        )

    def _resource(self, uri: str) -> tuple[str, dict[str, Any]] | None:
        declared = list(self._declared("resources"))
        for plugin_id, declaration in declared:
            if declaration["uri"] == uri and not declaration.get("variables"):
                return plugin_id, declaration
        return next(
            ((p, d) for p, d in declared if match_template(str(d["uri"]), uri) is not None), None
        )

    async def read_resource(self, uri: str) -> list[ResourceContent]:
        """Read ``uri`` through the plugin that declared it.

        Raises:
            ContentError: no plugin serves it, or the plugin failed.
        """
        found = self._resource(uri)
        if found is None:
            raise ContentError(f"Resource not found: {uri}", not_found=True)
        plugin_id, declaration = found
        body = {"uri": uri, "resource": declaration["uri"]}
        reply = await self._request("resource.read", plugin_id, body, f"resource {uri}")
        return [
            ResourceContent(
                uri=str(c.get("uri") or uri),
                mime_type=c.get("mime_type"),
                text=c.get("text"),
                blob=c.get("blob"),
            )
            for c in reply.get("contents", ())
        ]

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> PromptResult:
        """Fill in prompt ``name`` through the plugin that declared it.

        Raises:
            ContentError: no plugin serves it, or the plugin failed.
        """
        found = next(((p, d) for p, d in self._declared("prompts") if d["name"] == name), None)
        if found is None:
            raise ContentError(f"Prompt not found: {name}", not_found=True)
        plugin_id, declaration = found
        body = {"prompt": name, "arguments": dict(arguments)}
        reply = await self._request("prompt.get", plugin_id, body, f"prompt {name}")
        messages = tuple(
            PromptMessage(role=m["role"], content=ContentItem.model_validate(m["content"]))
            for m in reply.get("messages", ())
        )
        return PromptResult(messages=messages, description=declaration.get("description") or None)

    def complete(
        self, kind: Literal["prompt", "resource"], name: str, argument: str, value: str
    ) -> list[str]:
        """The declared completions of ``argument`` that start with ``value``."""
        if kind == "prompt":
            key, declarations = "name", self._declared("prompts")
        else:
            key, declarations = "uri", self._declared("resources")
        for _, declaration in declarations:
            if declaration.get(key) == name:
                return complete_from(declaration.get("completions") or {}, argument, value)
        return []

    async def _request(
        self, method: wire.Method, plugin_id: str, body: dict[str, Any], what: str
    ) -> dict[str, Any]:
        # The owner is a ToolInvoker; the runner supervisor is also a ContentReader.
        owner: object = self._components.owner(plugin_id)
        if not isinstance(owner, ContentReader):
            raise ContentError(f"{what}: plugin {plugin_id} is not running")
        try:
            reply = await owner.request_content(method, plugin_id, body, self._timeout)
        except TimeoutError:
            raise ContentError(f"{what} did not answer within {self._timeout:g} s") from None
        except Exception as exc:  # RemoteError, RunnerCrashedError: the message says it all
            raise ContentError(str(exc)) from None
        return reply if isinstance(reply, dict) else {}
