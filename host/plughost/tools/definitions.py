"""Tool definitions in the shapes model APIs expect, built from ToolSpec.

Both shapes come from one internal form, :class:`ToolDefinition`, so the
OpenAI and Anthropic lists can never disagree about a name, a description or
a schema. Output is deterministic: the same spec always gives an equal dict
with the same key order, which keeps prompt caches valid between requests.

What does not live here: choosing which tools to define (the registry and the
tool search layer) and converting results back (:mod:`plughost.tools.history`).
"""

from __future__ import annotations

from collections.abc import Iterable
from copy import deepcopy
from dataclasses import dataclass
from typing import Any, Literal

from plughost_sdk.models import ToolSpec

__all__ = [
    "DefinitionFormat",
    "ToolDefinition",
    "definition_of",
    "to_anthropic",
    "to_definitions",
    "to_openai",
]

DefinitionFormat = Literal["openai", "anthropic"]


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """The provider-neutral definition of one tool.

    Attributes:
        name: The model-facing name.
        description: What the model reads to decide whether to call the tool.
        parameters: An object JSON Schema, never missing ``type``/``properties``.
    """

    name: str
    description: str
    parameters: dict[str, Any]


def definition_of(spec: ToolSpec) -> ToolDefinition:
    """Build the neutral definition of ``spec``.

    The schema is copied, so callers may edit a definition without touching
    the spec the registry routes by. A schema without ``type`` is an object;
    an object schema without ``properties`` gets an empty one, because some
    APIs reject a function whose parameters lack either.
    """
    return ToolDefinition(
        name=spec.name,
        description=spec.description or spec.title or "",
        parameters=_normalized_schema(spec.parameters_schema),
    )


def to_openai(spec: ToolSpec) -> dict[str, Any]:
    """Return the OpenAI Chat Completions ``tools`` entry of ``spec``."""
    definition = definition_of(spec)
    return {
        "type": "function",
        "function": {
            "name": definition.name,
            "description": definition.description,
            "parameters": definition.parameters,
        },
    }


def to_anthropic(spec: ToolSpec) -> dict[str, Any]:
    """Return the Anthropic Messages ``tools`` entry of ``spec``."""
    definition = definition_of(spec)
    return {
        "name": definition.name,
        "description": definition.description,
        "input_schema": definition.parameters,
    }


def to_definitions(specs: Iterable[ToolSpec], fmt: DefinitionFormat) -> list[dict[str, Any]]:
    """Convert specs in order into one API's definition list.

    Raises:
        ValueError: If ``fmt`` is not ``openai`` or ``anthropic``.
    """
    if fmt == "openai":
        return [to_openai(spec) for spec in specs]
    if fmt == "anthropic":
        return [to_anthropic(spec) for spec in specs]
    raise ValueError(f"unknown definition format {fmt!r}; use 'openai' or 'anthropic'")


def _normalized_schema(schema: dict[str, Any]) -> dict[str, Any]:
    copied = deepcopy(schema) if isinstance(schema, dict) else {}
    json_type = copied.pop("type", "object")
    normalized: dict[str, Any] = {"type": json_type}
    if json_type == "object":
        properties = copied.pop("properties", None)
        normalized["properties"] = properties if isinstance(properties, dict) else {}
    normalized.update(copied)
    return normalized
