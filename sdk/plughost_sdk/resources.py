"""``@Resource`` and ``@Prompt``: what a plugin serves besides tools.

A resource is content a client reads by URI (``notes://today``); a URI with
``{name}`` parts (``notes://day/{date}``) is a *template*, and each part
reaches the handler as a keyword argument. A prompt is a named message
template a user picks; its arguments reach the handler as keyword arguments.
Both are served to MCP clients by ``plughost serve`` (``resources/read``,
``prompts/get``), under the names the plugin gives them.

As with ``@Tool``, the decorators only mark the method; the declarations are
built and checked when the plugin class is defined, so a bad one fails at
import with a message naming the plugin. The handlers' return values are turned
into wire form here (:func:`resource_contents`, :func:`prompt_messages`), in
the runner, so the host only ever sees checked data.

What a resource handler may return: ``str`` (text), ``bytes`` (a blob), a dict
of only ``text`` or ``bytes`` (base64 text or raw bytes) and optionally
``mime_type`` and ``uri``, any other JSON-serializable value (sent as
``application/json`` text), or a list of these.
What a prompt handler may return: ``str`` (one user message), or a list whose
items are ``str`` or ``{"role": "user" | "assistant", "content": ...}`` where
``content`` is text or a content item (``{"type": "image", "bytes": ...,
"mime_type": "image/png"}``, the same shape a tool's ``content_items`` take).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from plughost_sdk.errors import PluginDeclarationError
from plughost_sdk.results import parse_content_items

__all__ = [
    "Prompt",
    "PromptArgument",
    "PromptDeclaration",
    "Resource",
    "ResourceDeclaration",
    "collect_prompts",
    "collect_resources",
    "match_template",
    "prompt_messages",
    "resource_contents",
]

RESOURCE_MARK = "__plughost_resource__"
PROMPT_MARK = "__plughost_prompt__"
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
F = TypeVar("F", bound=Callable[..., Any])
_CONTENT_PAYLOADS = frozenset({"text", "bytes", "blob"})
_CONTENT_KEYS = _CONTENT_PAYLOADS | {"uri", "mime_type"}


@dataclass(frozen=True, slots=True)
class PromptArgument:
    """One argument of a prompt, as a client shows it to the user."""

    name: str
    description: str = ""
    required: bool = True


@dataclass(frozen=True, slots=True)
class ResourceDeclaration:
    """One checked ``@Resource`` of a plugin; a template when ``variables`` is not empty."""

    uri: str
    name: str
    handler_name: str
    title: str | None = None
    description: str = ""
    mime_type: str | None = None
    variables: tuple[str, ...] = ()
    completions: dict[str, list[str]] = field(default_factory=dict)

    @property
    def is_template(self) -> bool:
        """Whether the URI has ``{name}`` parts."""
        return bool(self.variables)

    def to_wire(self) -> dict[str, Any]:
        """The msgpack-ready dict the runner sends to the host."""
        return {
            "uri": self.uri,
            "name": self.name,
            "handler": self.handler_name,
            "title": self.title,
            "description": self.description,
            "mime_type": self.mime_type,
            "variables": list(self.variables),
            "completions": self.completions,
        }


@dataclass(frozen=True, slots=True)
class PromptDeclaration:
    """One checked ``@Prompt`` of a plugin."""

    name: str
    handler_name: str
    title: str | None = None
    description: str = ""
    arguments: tuple[PromptArgument, ...] = ()
    completions: dict[str, list[str]] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        """The msgpack-ready dict the runner sends to the host."""
        return {
            "name": self.name,
            "handler": self.handler_name,
            "title": self.title,
            "description": self.description,
            "arguments": [
                {"name": a.name, "description": a.description, "required": a.required}
                for a in self.arguments
            ],
            "completions": self.completions,
        }


@dataclass(frozen=True, slots=True)
class _ResourceMark:
    uri: str
    name: str | None
    title: str | None
    description: str
    mime_type: str | None
    completions: Mapping[str, Iterable[str]] | None


@dataclass(frozen=True, slots=True)
class _PromptMark:
    name: str
    title: str | None
    description: str
    arguments: tuple[PromptArgument | str, ...]
    completions: Mapping[str, Iterable[str]] | None


def Resource(  # noqa: N802 - a decorator named like the component it declares
    uri: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str = "",
    mime_type: str | None = None,
    completions: Mapping[str, Iterable[str]] | None = None,
) -> Callable[[F], F]:
    """Declare a plugin method as the reader of a resource (or of a URI template).

    Args:
        uri: The resource's URI (``scheme:...``); ``{name}`` parts make it a
            template whose values reach the handler as keyword arguments.
        name: A short name for clients (default: the method name).
        title: A human-readable title.
        description: What the resource holds.
        mime_type: The MIME type of its content (default: ``text/plain`` for
            text, ``application/octet-stream`` for bytes).
        completions: For a template, the values a client may offer while the
            user types each variable (``completion/complete``), by variable name.

    Returns:
        A decorator that marks the method and returns it unchanged.
    """
    mark = _ResourceMark(uri, name, title, description, mime_type, completions)
    return _marker(RESOURCE_MARK, mark)


def Prompt(  # noqa: N802
    name: str,
    *,
    title: str | None = None,
    description: str = "",
    arguments: Iterable[PromptArgument | str] = (),
    completions: Mapping[str, Iterable[str]] | None = None,
) -> Callable[[F], F]:
    """Declare a plugin method as a prompt; its arguments are the handler's keyword arguments.

    Args:
        name: The prompt's name; unique within the plugin.
        title: A human-readable title.
        description: What the prompt is for.
        arguments: :class:`PromptArgument` items, or plain names (required).
        completions: The values a client may offer for each argument, by name.

    Returns:
        A decorator that marks the method and returns it unchanged.
    """
    mark = _PromptMark(name, title, description, tuple(arguments), completions)
    return _marker(PROMPT_MARK, mark)


def _marker(attribute: str, mark: object) -> Callable[[F], F]:
    def decorate(func: F) -> F:
        setattr(func, attribute, mark)
        return func

    return decorate


def collect_resources(cls: type) -> list[ResourceDeclaration]:
    """Collect and check every ``@Resource`` of a plugin class (and its bases).

    Raises:
        PluginDeclarationError: naming the plugin class and the resource.
    """
    found = [
        _resource(getattr(member, RESOURCE_MARK), attr_name, cls.__name__)
        for attr_name, member in _marked(cls, RESOURCE_MARK)
    ]
    _check_unique(cls, "resource", [d.uri for d in found])
    return found


def collect_prompts(cls: type) -> list[PromptDeclaration]:
    """Collect and check every ``@Prompt`` of a plugin class (and its bases).

    Raises:
        PluginDeclarationError: naming the plugin class and the prompt.
    """
    found = [
        _prompt(getattr(member, PROMPT_MARK), attr_name, cls.__name__)
        for attr_name, member in _marked(cls, PROMPT_MARK)
    ]
    _check_unique(cls, "prompt", [d.name for d in found])
    return found


def _check_unique(cls: type, kind: str, keys: list[str]) -> None:
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            raise PluginDeclarationError(f"plugin {cls.__name__}: {kind} {key!r} is declared twice")
        seen.add(key)


def _marked(cls: type, attribute: str) -> list[tuple[str, Any]]:
    found: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        for attr_name, member in vars(klass).items():
            if hasattr(member, attribute):
                found[attr_name] = member
            else:
                found.pop(attr_name, None)
    return list(found.items())


def _resource(mark: _ResourceMark, handler_name: str, owner: str) -> ResourceDeclaration:
    where = f"plugin {owner}, resource {mark.uri!r}"
    if not isinstance(mark.uri, str) or not _SCHEME.match(mark.uri):
        raise PluginDeclarationError(
            f"{where}: a resource URI starts with a scheme, like 'notes://today'"
        )
    name = mark.name or handler_name
    _check_name(name, where)
    variables = tuple(_VARIABLE.findall(mark.uri))
    if len(set(variables)) != len(variables):
        raise PluginDeclarationError(f"{where}: a template variable appears twice")
    completions = _completions(mark.completions, variables, where)
    return ResourceDeclaration(
        uri=mark.uri,
        name=name,
        handler_name=handler_name,
        title=mark.title,
        description=mark.description.strip(),
        mime_type=mark.mime_type,
        variables=variables,
        completions=completions,
    )


def _prompt(mark: _PromptMark, handler_name: str, owner: str) -> PromptDeclaration:
    where = f"plugin {owner}, prompt {mark.name!r}"
    _check_name(mark.name, where)
    arguments = tuple(
        a if isinstance(a, PromptArgument) else PromptArgument(a) for a in mark.arguments
    )
    names = [a.name for a in arguments]
    for argument in names:
        if not argument.isidentifier():
            raise PluginDeclarationError(
                f"{where}: argument {argument!r} must be a Python identifier"
            )
    if len(set(names)) != len(names):
        raise PluginDeclarationError(f"{where}: an argument is declared twice")
    return PromptDeclaration(
        name=mark.name,
        handler_name=handler_name,
        title=mark.title,
        description=mark.description.strip(),
        arguments=arguments,
        completions=_completions(mark.completions, tuple(names), where),
    )


def _check_name(name: Any, where: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise PluginDeclarationError(
            f"{where}: names may use only letters, digits, '_', '.' and '-', at most 64 characters"
        )


def _completions(
    raw: Mapping[str, Iterable[str]] | None, known: tuple[str, ...], where: str
) -> dict[str, list[str]]:
    completions: dict[str, list[str]] = {}
    for key, values in (raw or {}).items():
        if key not in known:
            raise PluginDeclarationError(
                f"{where}: completions name {key!r}, which is not one of its arguments "
                f"({', '.join(known) or 'none'})"
            )
        completions[key] = [str(value) for value in values]
    return completions


def match_template(template: str, uri: str) -> dict[str, str] | None:
    """Return the variables of ``uri`` read through ``template``, or None when it does not fit.

    A variable matches one or more characters other than ``/``.
    """
    pattern = ""
    last = 0
    for match in _VARIABLE.finditer(template):
        pattern += re.escape(template[last : match.start()]) + f"(?P<{match.group(1)}>[^/]+)"
        last = match.end()
    pattern += re.escape(template[last:])
    found = re.fullmatch(pattern, uri)
    return found.groupdict() if found else None


# --- return values -----------------------------------------------------------------------------


def resource_contents(uri: str, mime_type: str | None, value: Any) -> list[dict[str, Any]]:
    """Turn a resource handler's return value into wire contents.

    Raises:
        ValueError: the value is not something a resource can hold (the message says why).
    """
    values = value if isinstance(value, list | tuple) else [value]
    return [_content(uri, mime_type, item, index) for index, item in enumerate(values)]


def _content(uri: str, mime_type: str | None, item: Any, index: int) -> dict[str, Any]:
    if isinstance(item, str):
        return {"uri": uri, "mime_type": mime_type or "text/plain", "text": item}
    if isinstance(item, bytes | bytearray):
        blob = bytes(item)
        return {"uri": uri, "mime_type": mime_type or "application/octet-stream", "blob": blob}
    if _is_content(item):
        own_uri = str(item.get("uri") or uri)
        own_mime = item.get("mime_type") or mime_type
        if "text" in item:
            text = str(item["text"])
            return {"uri": own_uri, "mime_type": own_mime or "text/plain", "text": text}
        raw = {("bytes" if key == "blob" else key): item[key] for key in item if key != "uri"}
        data = parse_content_items([{"type": "binary", **raw}])[0].data or b""
        return {"uri": own_uri, "mime_type": own_mime or "application/octet-stream", "blob": data}
    try:
        text = json.dumps(item, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"resource content {index} is a {type(item).__name__}; return str, bytes, a dict "
            "with 'text' or 'bytes', or JSON-serializable data"
        ) from exc
    return {"uri": uri, "mime_type": mime_type or "application/json", "text": text}


def _is_content(item: Any) -> bool:
    """A dict of content keys only (``{"text": ...}``, ``{"bytes": ...}``); other dicts are data."""
    return (
        isinstance(item, Mapping)
        and bool(item.keys() & _CONTENT_PAYLOADS)
        and item.keys() <= _CONTENT_KEYS
    )


def prompt_messages(value: Any) -> list[dict[str, Any]]:
    """Turn a prompt handler's return value into wire messages ``{"role", "content"}``.

    ``content`` is a content item in wire form (``{"content_type": "text", "text": ...}``).

    Raises:
        ValueError: a message is malformed (the message says which).
    """
    values = value if isinstance(value, list | tuple) else [value]
    return [_message(item, index) for index, item in enumerate(values)]


def _message(item: Any, index: int) -> dict[str, Any]:
    role: Any = "user"
    content: Any = item
    if isinstance(item, Mapping) and "role" in item:
        role, content = item["role"], item.get("content")
    if role not in ("user", "assistant"):
        raise ValueError(
            f"prompt message {index}: role must be 'user' or 'assistant', not {role!r}"
        )
    if isinstance(content, str):
        content = {"type": "text", "text": content}
    if not isinstance(content, Mapping):
        raise ValueError(
            f"prompt message {index}: content must be text or a content item dict, "
            f"not {type(content).__name__}"
        )
    parsed = parse_content_items([dict(content)])[0]
    return {"role": role, "content": parsed.model_dump(exclude_defaults=True)}
