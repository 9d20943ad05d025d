"""Upstream MCP servers' resources, resource templates and prompts, re-served as they are.

:class:`~plughost.mcp.provider.MCPToolProvider` delegates its
:class:`~plughost.tools.resources.ContentProvider` methods here. What a server
lists (when ``enabled_tools`` is ``["*"]``, as for resources and prompts turned
into tools) is served again under names namespaced like tools:

============  ==========================  ============================
entry         name                        address
============  ==========================  ============================
resource      ``mcp_{server}_{name}``     its URI, unchanged
template      ``mcp_{server}_{name}``     its URI template, unchanged
prompt        ``mcp_{server}_{name}``     the namespaced name
============  ==========================  ============================

URIs stay as the server wrote them, so the links inside its tool results keep
working; a read goes to the server that lists the URI, or whose template
matches it. ``completion/complete`` for a re-served prompt or template is
forwarded to its server. A call's failure is a
:class:`~plughost.tools.resources.ContentError` with the server's message.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, TypeVar

import mcp_types as types
from mcp import Client, MCPError

from plughost.mcp.client import MCPConnection, ServerUnavailableError
from plughost.mcp.content import content_from_mcp
from plughost.tools.naming import qualified_name
from plughost.tools.resources import (
    ContentError,
    PromptArgumentInfo,
    PromptInfo,
    PromptMessage,
    PromptResult,
    ResourceContent,
    ResourceInfo,
)
from plughost_sdk.models import ContentItem
from plughost_sdk.resources import match_template

__all__ = ["UpstreamContent", "content_request"]

T = TypeVar("T")


class UpstreamContent:
    """The resources and prompts of a provider's connected servers (see the module doc)."""

    def __init__(self, connections: Mapping[str, MCPConnection], provider_name: str) -> None:
        self._connections = connections
        self._prefix = provider_name

    def _name(self, server: str, name: str) -> str:
        return qualified_name(self._prefix, server, name)

    def list_resources(self) -> list[ResourceInfo]:
        """Every resource and template of every connected server."""
        found: list[ResourceInfo] = []
        for server, connection in self._connections.items():
            catalog = connection.catalog
            if catalog is None:
                continue
            found += [_resource(self._name(server, r.name), r) for r in catalog.resources]
            found += [_template(self._name(server, t.name), t) for t in catalog.templates]
        return found

    def list_prompts(self) -> list[PromptInfo]:
        """Every prompt of every connected server, under its namespaced name."""
        found: list[PromptInfo] = []
        for server, connection in self._connections.items():
            catalog = connection.catalog
            if catalog is not None:
                found += [_prompt(self._name(server, p.name), p) for p in catalog.prompts]
        return found

    async def read_resource(self, uri: str) -> list[ResourceContent]:
        """Read ``uri`` from the server that lists it (or whose template matches it)."""
        server = self.server_of_uri(uri)
        if server is None:
            raise ContentError(f"Resource not found: {uri}", not_found=True)

        async def read(client: Client) -> types.ReadResourceResult:
            return await client.read_resource(uri)

        result = await self._request(server, read, f"resource {uri}")
        return [_contents(c) for c in result.contents]

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> PromptResult:
        """Fill in a namespaced prompt on its server."""
        found = self._prompt_of(name)
        if found is None:
            raise ContentError(f"Prompt not found: {name}", not_found=True)
        server, original = found

        async def get(client: Client) -> types.GetPromptResult:
            return await client.get_prompt(original, dict(arguments))

        result = await self._request(server, get, f"prompt {name}")
        messages = tuple(PromptMessage(m.role, _item(m.content)) for m in result.messages)
        return PromptResult(messages=messages, description=result.description)

    async def complete(
        self,
        kind: Literal["prompt", "resource"],
        name: str,
        argument: str,
        value: str,
        context: Mapping[str, str],
    ) -> list[str]:
        """Forward ``completion/complete`` to the server of the prompt or template."""
        ref: types.PromptReference | types.ResourceTemplateReference
        if kind == "prompt":
            found = self._prompt_of(name)
            if found is None:
                return []
            server, original = found
            ref = types.PromptReference(name=original)
        else:
            server_of = self._server_of_template(name)
            if server_of is None:
                return []
            server, ref = server_of, types.ResourceTemplateReference(uri=name)
        connection = self._connections[server]
        capabilities = connection.catalog.completions if connection.catalog else False
        if not capabilities:
            return []

        async def complete(client: Client) -> types.CompleteResult:
            return await client.complete(
                ref, {"name": argument, "value": value}, context_arguments=dict(context) or None
            )

        result = await self._request(server, complete, f"completion for {name}")
        return list(result.completion.values)

    def server_of_uri(self, uri: str) -> str | None:
        """The server that lists ``uri``, or whose template matches it."""
        for server, connection in self._connections.items():
            catalog = connection.catalog
            if catalog is not None and any(r.uri == uri for r in catalog.resources):
                return server
        for server, connection in self._connections.items():
            catalog = connection.catalog
            if catalog is not None and any(
                match_template(t.uri_template, uri) is not None for t in catalog.templates
            ):
                return server
        return None

    def _server_of_template(self, uri_template: str) -> str | None:
        for server, connection in self._connections.items():
            catalog = connection.catalog
            if catalog is not None and any(
                t.uri_template == uri_template for t in catalog.templates
            ):
                return server
        return None

    def _prompt_of(self, name: str) -> tuple[str, str] | None:
        for server, connection in self._connections.items():
            catalog = connection.catalog
            for prompt in catalog.prompts if catalog is not None else ():
                if self._name(server, prompt.name) == name:
                    return server, prompt.name
        return None

    async def _request(
        self, server: str, operation: Callable[[Client], Awaitable[T]], what: str
    ) -> T:
        return await content_request(self._connections[server], operation, what)


async def content_request(
    connection: MCPConnection,
    operation: Callable[[Client], Awaitable[T]],
    what: str,
    *,
    idempotent: bool = False,
) -> T:
    """Run ``operation`` under the server's ``tool_timeout``; any failure is a ContentError."""
    server, timeout = connection.name, connection.config.tool_timeout
    try:
        return await connection.request(operation, timeout=timeout, idempotent=idempotent)
    except TimeoutError:
        raise ContentError(
            f"MCP server {server!r} did not answer {what} within {timeout:g} s"
        ) from None
    except ServerUnavailableError as exc:
        raise ContentError(f"MCP server {server!r} is unavailable: {exc}") from None
    except MCPError as exc:
        raise ContentError(f"MCP server {server!r} refused {what}: {exc.message}") from None


def _resource(name: str, resource: types.Resource) -> ResourceInfo:
    description = resource.description or ""
    return ResourceInfo(resource.uri, name, resource.title, description, resource.mime_type)


def _template(name: str, template: types.ResourceTemplate) -> ResourceInfo:
    description = template.description or ""
    uri, mime = template.uri_template, template.mime_type
    return ResourceInfo(uri, name, template.title, description, mime, template=True)


def _prompt(name: str, prompt: types.Prompt) -> PromptInfo:
    arguments = tuple(
        PromptArgumentInfo(a.name, a.description or "", bool(a.required))
        for a in prompt.arguments or ()
    )
    return PromptInfo(name, prompt.title, prompt.description or "", arguments)


def _contents(contents: types.TextResourceContents | types.BlobResourceContents) -> ResourceContent:
    if isinstance(contents, types.TextResourceContents):
        return ResourceContent(contents.uri, contents.mime_type, text=contents.text)
    try:
        blob = base64.b64decode(contents.blob, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ContentError(f"resource {contents.uri}: its blob is not valid base64") from exc
    return ResourceContent(contents.uri, contents.mime_type, blob=blob)


def _item(block: Any) -> ContentItem:
    try:
        texts, items = content_from_mcp([block])
    except ValueError as exc:
        raise ContentError(f"a prompt message is malformed: {exc}") from exc
    if items:
        return items[0]
    return ContentItem(content_type="text", text="".join(texts))
