"""How one catalog of one MCP server becomes the tools plughost lists, and where each routes.

Each tool, resource and prompt the server offers becomes a :class:`ToolSpec`
under a namespaced name (``mcp_SERVER_TOOL``, ``mcp_SERVER_resource_NAME``,
``mcp_SERVER_prompt_NAME``) with the :class:`Route` back to what it names; the
tools the configuration does not enable, and those over a bound
(:mod:`plughost.mcp.tool_bounds`), are left out.

What does not live here: connecting and calling (:mod:`plughost.mcp.provider`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Literal

import mcp_types as types

from plughost.mcp.config import MCPServerConfig
from plughost.mcp.session import Catalog
from plughost.mcp.tool_bounds import bounded_tools
from plughost.tools.naming import qualified_name
from plughost_sdk.models import ToolSpec

__all__ = ["Route", "ServerView", "build_view", "tool_name"]

# The provider's logger: these are the provider's records, wherever the code lives.
log = logging.getLogger("plughost.mcp.provider")

Kind = Literal["tool", "resource", "prompt"]
_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True, slots=True)
class Route:
    server: str
    kind: Kind
    target: str  # the original tool name, the resource URI or the prompt name


@dataclass(slots=True)
class ServerView:
    """The specs and routes built from one catalog of one server."""

    catalog: Catalog
    specs: list[ToolSpec] = field(default_factory=list)
    routes: dict[str, Route] = field(default_factory=dict)
    refused: tuple[str, ...] = ()  # tools over a bound (plughost.mcp.tool_bounds)


def build_view(
    provider_name: str, server: str, config: MCPServerConfig, catalog: Catalog
) -> ServerView:
    view = ServerView(catalog=catalog)
    tools, view.refused = bounded_tools(server, _enabled(server, config, catalog.tools))
    entries: list[tuple[ToolSpec, Route]] = [_tool_entry(server, tool) for tool in tools]
    entries += [_resource_entry(server, resource) for resource in catalog.resources]
    entries += [_prompt_entry(server, prompt) for prompt in catalog.prompts]
    listed: set[str] = set()
    for spec, route in entries:
        if spec.tool_id in listed:  # one name listed twice: the name runs the first
            log.warning("mcp server lists a name twice, the first kept tool_id=%s", spec.tool_id)
            continue
        listed.add(spec.tool_id)
        name, tries = spec.name, 0
        while name in view.routes:  # raw names that sanitize alike, or to a qualified one
            tries += 1
            name = qualified_name(spec.name, spec.tool_id, str(tries) if tries > 1 else "")
        spec = spec.model_copy(update={"provider_name": provider_name, "name": name})
        view.specs.append(spec)
        view.routes[name] = route
    return view


def _enabled(
    server: str, config: MCPServerConfig, tools: tuple[types.Tool, ...]
) -> list[types.Tool]:
    if config.exposes_everything:
        return list(tools)
    wanted = set(config.enabled_tools)
    chosen = [t for t in tools if t.name in wanted or tool_name(server, t.name) in wanted]
    known = {t.name for t in tools} | {tool_name(server, t.name) for t in tools}
    unknown = sorted(wanted - known)
    if unknown:
        available = ", ".join(sorted(t.name for t in tools)) or "none"
        log.warning(
            "mcp enabled_tools names no tool server=%s unknown=%s available=%s",
            server,
            ", ".join(unknown),
            available,
        )
    return chosen


def tool_name(server: str, tool: str) -> str:
    return qualified_name("mcp", server, tool)


def _tool_entry(server: str, tool: types.Tool) -> tuple[ToolSpec, Route]:
    metadata: dict[str, Any] = {"server": server, "original_name": tool.name, "kind": "tool"}
    annotations = tool.annotations
    if annotations is not None and annotations.read_only_hint is not None:
        metadata["read_only"] = annotations.read_only_hint
    title = tool.title or (annotations.title if annotations is not None else None)
    spec = ToolSpec(
        name=tool_name(server, tool.name),
        description=tool.description or "",
        title=title,
        parameters_schema=_object_schema(tool.input_schema),
        output_schema=tool.output_schema,
        provider_type="mcp",
        metadata=metadata,
        tool_id=f"mcp:{server}:{tool.name}",
        mcp_tool=tool,
    )
    return spec, Route(server, "tool", tool.name)


def _resource_entry(server: str, resource: types.Resource) -> tuple[ToolSpec, Route]:
    summary = f"Read the MCP resource {resource.uri} from server {server}."
    return _content_entry(
        server,
        "resource",
        resource.name,
        (resource.title, resource.description, summary),
        dict(_EMPTY_SCHEMA),
        resource.uri,
        uri=resource.uri,
    )


def _prompt_entry(server: str, prompt: types.Prompt) -> tuple[ToolSpec, Route]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for argument in prompt.arguments or []:
        schema: dict[str, Any] = {"type": "string"}
        if argument.description:
            schema["description"] = argument.description
        properties[argument.name] = schema
        if argument.required:
            required.append(argument.name)
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    summary = f"Get the filled-in MCP prompt {prompt.name!r} from server {server}."
    texts = (prompt.title, prompt.description, summary)
    return _content_entry(server, "prompt", prompt.name, texts, parameters, prompt.name)


def _content_entry(
    server: str,
    kind: Kind,
    name: str,
    texts: tuple[str | None, str | None, str],
    parameters: dict[str, Any],
    target: str,
    **metadata: Any,
) -> tuple[ToolSpec, Route]:
    """A resource or prompt as a read-only tool: ``texts`` is its title, description, summary."""
    title, description, summary = texts
    spec = ToolSpec(
        name=qualified_name("mcp", server, kind, name),
        description=f"{description}\n{summary}" if description else summary,
        title=title,
        parameters_schema=parameters,
        provider_type="mcp",
        metadata={
            "server": server,
            "original_name": name,
            "kind": kind,
            **metadata,
            "read_only": True,
        },
        tool_id=f"mcp:{server}:{kind}:{name}",
    )
    return spec, Route(server, kind, target)


def _object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """MCP requires an object root; make sure ``properties`` is there for model APIs."""
    result = dict(schema)
    result.setdefault("type", "object")
    if result.get("type") == "object":
        result.setdefault("properties", {})
    return result
