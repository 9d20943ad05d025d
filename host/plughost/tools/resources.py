"""Resources, resource templates and prompts: what providers serve besides tools.

A tool provider may also be a :class:`ContentProvider`: plugins (``@Resource``,
``@Prompt``) and upstream MCP servers are. :class:`ContentCatalog` merges every
content provider registered on a :class:`~plughost.tools.registry.ToolRegistry`,
in provider order, and routes a read, a prompt or a completion to the one that
listed it. As with tools, the first provider keeps a URI or a name that two offer.

A resource read is routed by exact URI first, then by the first template that
matches it (``{name}`` matches one or more characters other than ``/``). Failures
raise :class:`ContentError` with a message for the client; an unknown URI or
prompt is ``ContentError(..., not_found=True)``.

What does not live here: serving them over MCP (:mod:`plughost.mcp.server_content`),
the plugin and MCP providers themselves.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from plughost.tools.provider import ToolProvider
from plughost_sdk.models import ContentItem
from plughost_sdk.resources import match_template

__all__ = [
    "ContentCatalog",
    "ContentError",
    "ContentProvider",
    "PromptArgumentInfo",
    "PromptInfo",
    "PromptMessage",
    "PromptResult",
    "ResourceContent",
    "ResourceInfo",
    "complete_from",
]

log = logging.getLogger(__name__)

_COMPLETIONS = 100


class ContentError(Exception):
    """A resource or prompt could not be served; the message is for the client."""

    def __init__(self, message: str, *, not_found: bool = False) -> None:
        super().__init__(message)
        self.not_found = not_found


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """A resource, or a resource template when ``template`` is true (``uri`` has ``{name}``)."""

    uri: str
    name: str
    title: str | None = None
    description: str = ""
    mime_type: str | None = None
    template: bool = False


@dataclass(frozen=True, slots=True)
class PromptArgumentInfo:
    """One argument of a prompt."""

    name: str
    description: str = ""
    required: bool = True


@dataclass(frozen=True, slots=True)
class PromptInfo:
    """A prompt and its arguments."""

    name: str
    title: str | None = None
    description: str = ""
    arguments: tuple[PromptArgumentInfo, ...] = ()


@dataclass(frozen=True, slots=True)
class ResourceContent:
    """One part of a resource: text, or a blob."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: bytes | None = None


@dataclass(frozen=True, slots=True)
class PromptMessage:
    """One message of a filled-in prompt."""

    role: Literal["user", "assistant"]
    content: ContentItem


@dataclass(frozen=True, slots=True)
class PromptResult:
    """A filled-in prompt."""

    messages: tuple[PromptMessage, ...]
    description: str | None = None


@runtime_checkable
class ContentProvider(Protocol):
    """A provider that serves resources and prompts as well as tools."""

    provider_name: str

    async def list_resources(self) -> list[ResourceInfo]:
        """Every resource and resource template it serves."""
        ...

    async def read_resource(self, uri: str) -> list[ResourceContent]:
        """Read ``uri``; raise :class:`ContentError` when it cannot."""
        ...

    async def list_prompts(self) -> list[PromptInfo]:
        """Every prompt it serves."""
        ...

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> PromptResult:
        """Fill in prompt ``name``; raise :class:`ContentError` when it cannot."""
        ...

    async def complete(
        self,
        kind: Literal["prompt", "resource"],
        name: str,
        argument: str,
        value: str,
        context: Mapping[str, str],
    ) -> list[str]:
        """Values for ``argument`` of prompt (or template) ``name`` that fit ``value``."""
        ...


class _Providers(Protocol):
    @property
    def providers(self) -> tuple[ToolProvider, ...]: ...


@dataclass(slots=True)
class _View:
    resources: dict[str, tuple[ContentProvider, ResourceInfo]] = field(default_factory=dict)
    templates: dict[str, tuple[ContentProvider, ResourceInfo]] = field(default_factory=dict)
    prompts: dict[str, tuple[ContentProvider, PromptInfo]] = field(default_factory=dict)


class ContentCatalog:
    """The resources and prompts of every content provider of a registry, merged.

    ``registry`` is a :class:`~plughost.tools.registry.ToolRegistry` (anything with
    ``providers``); the catalog keeps no state of its own, so it always reflects
    the providers registered now.
    """

    def __init__(self, registry: _Providers) -> None:
        self._registry = registry

    def providers(self) -> list[ContentProvider]:
        """The registry's content providers, in registration order."""
        return [p for p in self._registry.providers if isinstance(p, ContentProvider)]

    async def _view(self) -> _View:
        view = _View()
        for provider in self.providers():
            try:
                resources = await provider.list_resources()
                prompts = await provider.list_prompts()
            except Exception:  # one provider listing badly must not hide the others
                log.exception("content listing failed provider=%s", provider.provider_name)
                continue
            for resource in resources:
                target = view.templates if resource.template else view.resources
                target.setdefault(resource.uri, (provider, resource))
            for prompt in prompts:
                view.prompts.setdefault(prompt.name, (provider, prompt))
        return view

    async def list_resources(self) -> list[ResourceInfo]:
        """Every resource (not templates), first provider first."""
        return [info for _, info in (await self._view()).resources.values()]

    async def list_templates(self) -> list[ResourceInfo]:
        """Every resource template, first provider first."""
        return [info for _, info in (await self._view()).templates.values()]

    async def list_prompts(self) -> list[PromptInfo]:
        """Every prompt, first provider first."""
        return [info for _, info in (await self._view()).prompts.values()]

    async def read_resource(self, uri: str) -> list[ResourceContent]:
        """Read ``uri`` from the provider that lists it, or whose template matches it.

        Raises:
            ContentError: no provider serves ``uri`` (``not_found``), or the read failed.
        """
        view = await self._view()
        entry = view.resources.get(uri)
        if entry is None:
            entry = next(
                (e for t, e in view.templates.items() if match_template(t, uri) is not None), None
            )
        if entry is None:
            raise ContentError(f"Resource not found: {uri}", not_found=True)
        return await entry[0].read_resource(uri)

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> PromptResult:
        """Fill in prompt ``name``, after checking its required arguments are there.

        Raises:
            ContentError: no such prompt (``not_found``), a required argument is
                missing, or the provider failed.
        """
        entry = (await self._view()).prompts.get(name)
        if entry is None:
            raise ContentError(f"Prompt not found: {name}", not_found=True)
        provider, info = entry
        missing = [a.name for a in info.arguments if a.required and a.name not in arguments]
        if missing:
            raise ContentError(f"prompt {name} needs the argument(s) {', '.join(missing)}")
        return await provider.get_prompt(name, arguments)

    async def complete(
        self,
        kind: Literal["prompt", "resource"],
        name: str,
        argument: str,
        value: str,
        context: Mapping[str, str] | None = None,
    ) -> list[str]:
        """Completion values for an argument of a prompt or a resource template.

        Unknown prompts and templates have no completions (an empty list), as do
        providers that fail: completion is a convenience, never an error.
        """
        view = await self._view()
        entry = view.prompts.get(name) if kind == "prompt" else view.templates.get(name)
        if entry is None:
            return []
        try:
            values = await entry[0].complete(kind, name, argument, value, dict(context or {}))
        except Exception:
            log.exception("completion failed provider=%s name=%s", entry[0].provider_name, name)
            return []
        return values[:_COMPLETIONS]


def complete_from(choices: Mapping[str, list[str]], argument: str, value: str) -> list[str]:
    """The declared ``choices`` of ``argument`` that start with ``value`` (case-insensitive)."""
    typed = value.casefold()
    return [c for c in choices.get(argument, []) if c.casefold().startswith(typed)]
