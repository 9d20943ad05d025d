"""Build and validate tool declarations from ``@Tool``/``@Action`` marks.

A :class:`ToolDeclaration` is what a plugin tells the host about one tool: the
model-facing description, the JSON Schema of its parameters, its visibility
and metadata. It travels to the host as a plain dict (:meth:`to_wire`).

Description rules (the SDK's public contract):

1. With a ``detailed_description``, a ``Parameter details:`` section generated
   from the schema is appended to it (unless it already has one).
2. With only a brief description, the detailed description is that generated
   section.
3. Each parameter line reads ``- name: type, required|optional. Description``,
   then ``Allowed values: a, b`` and ``Default: x`` where they apply.

The model sees the brief description, a blank line, then the detailed one.
"""

from __future__ import annotations

import inspect
import json
import keyword
import re
from collections.abc import Mapping
from copy import deepcopy
from dataclasses import dataclass, field
from typing import Any

from plughost_sdk._decorators import MARK_ATTRIBUTE, ToolMark
from plughost_sdk.errors import PluginDeclarationError
from plughost_sdk.types import ToolParameterInfo, ToolParamType

__all__ = [
    "TOOL_NAME_PATTERN",
    "ToolDeclaration",
    "build_declaration",
    "build_parameters_schema",
    "collect_declarations",
    "generate_parameter_details",
]

TOOL_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
PARAMETER_DETAILS_HEADING = "Parameter details:"
VISIBILITIES = ("visible", "deferred", "hidden")
CHAT_SCOPES = ("all", "group", "private")


@dataclass(frozen=True, slots=True)
class ToolDeclaration:
    """One validated tool of a plugin."""

    name: str
    handler_name: str
    description: str
    brief_description: str
    detailed_description: str
    parameters_schema: dict[str, Any]
    visibility: str
    metadata: dict[str, Any] = field(default_factory=dict)
    legacy_action: bool = False

    def to_wire(self) -> dict[str, Any]:
        """The msgpack-ready dict the runner sends to the host."""
        return {
            "name": self.name,
            "handler": self.handler_name,
            "description": self.description,
            "brief_description": self.brief_description,
            "detailed_description": self.detailed_description,
            "parameters_schema": self.parameters_schema,
            "visibility": self.visibility,
            "metadata": self.metadata,
            "legacy_action": self.legacy_action,
        }


def collect_declarations(cls: type) -> list[ToolDeclaration]:
    """Collect and validate every tool declared on a plugin class (and its bases).

    Raises:
        PluginDeclarationError: naming the plugin class, the tool and the parameter.
    """
    declarations: list[ToolDeclaration] = []
    seen: dict[str, str] = {}
    for attr_name, member in _marked_members(cls):
        mark: ToolMark = getattr(member, MARK_ATTRIBUTE)
        declaration = build_declaration(mark, attr_name, owner=cls.__name__)
        if declaration.name in seen:
            raise PluginDeclarationError(
                f"plugin {cls.__name__}: tool name {declaration.name!r} is declared twice "
                f"(methods {seen[declaration.name]!r} and {attr_name!r}); tool names must be "
                "unique within a plugin"
            )
        seen[declaration.name] = attr_name
        declarations.append(declaration)
    return declarations


def _marked_members(cls: type) -> list[tuple[str, Any]]:
    found: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        for attr_name, member in vars(klass).items():
            target = member.__func__ if isinstance(member, staticmethod | classmethod) else member
            if hasattr(target, MARK_ATTRIBUTE):
                found[attr_name] = target
            else:
                found.pop(attr_name, None)
    return list(found.items())


def build_declaration(mark: ToolMark, handler_name: str, *, owner: str) -> ToolDeclaration:
    """Validate a mark and build its declaration.

    Raises:
        PluginDeclarationError: if the name, a parameter, the visibility or
            the metadata is invalid.
    """
    where = f"plugin {owner}, tool {mark.name!r}"
    if not isinstance(mark.name, str) or not mark.name.strip():
        raise PluginDeclarationError(
            f"plugin {owner}, method {handler_name!r}: @Tool needs a non-empty name"
        )
    if not TOOL_NAME_PATTERN.match(mark.name):
        raise PluginDeclarationError(
            f"{where}: names may use only letters, digits, '_' and '-', at most 64 characters "
            "(model APIs reject anything else)"
        )
    schema = build_parameters_schema(mark.parameters, where=where)
    metadata = _validated_metadata(mark, where)
    visibility = metadata["visibility"]
    detailed = _detailed_description(mark.detailed_description, schema)
    brief = mark.brief_description.strip()
    description = "\n\n".join(part for part in (brief, detailed) if part) or mark.name
    summary = brief or _first_line(mark.detailed_description) or mark.name.replace("_", " ")
    return ToolDeclaration(
        name=mark.name,
        handler_name=handler_name,
        description=description,
        brief_description=summary,
        detailed_description=detailed,
        parameters_schema=schema,
        visibility=visibility,
        metadata=metadata,
        legacy_action=mark.legacy_action,
    )


def _first_line(text: str) -> str:
    """The first non-empty line of an author's text (never the generated parameter section)."""
    for line in inspect.cleandoc(text).splitlines() if text else ():
        if line.strip() and not line.startswith(PARAMETER_DETAILS_HEADING):
            return line.strip()
    return ""


def _validated_metadata(mark: ToolMark, where: str) -> dict[str, Any]:
    metadata = deepcopy(mark.metadata)
    visibility = metadata.get("visibility", "visible" if mark.core_tool else "deferred")
    if mark.core_tool:
        visibility = "visible"
    if visibility not in VISIBILITIES:
        raise PluginDeclarationError(
            f"{where}: visibility {visibility!r} is not one of {', '.join(VISIBILITIES)}"
        )
    metadata["visibility"] = visibility
    metadata["core_tool"] = visibility == "visible"
    timeout = metadata.get("timeout_ms")
    if timeout is not None and (not isinstance(timeout, int) or isinstance(timeout, bool)):
        raise PluginDeclarationError(f"{where}: timeout_ms must be an integer of milliseconds")
    if isinstance(timeout, int) and timeout <= 0:
        raise PluginDeclarationError(f"{where}: timeout_ms must be positive, got {timeout}")
    scope = metadata.get("chat_scope", "all")
    if scope not in CHAT_SCOPES:
        raise PluginDeclarationError(
            f"{where}: chat_scope {scope!r} is not one of {', '.join(CHAT_SCOPES)}"
        )
    for flag in ("read_only", "exclusive"):
        if flag in metadata and not isinstance(metadata[flag], bool):
            raise PluginDeclarationError(f"{where}: {flag} must be True or False")
    return metadata


def build_parameters_schema(
    parameters: list[ToolParameterInfo] | Mapping[str, Any] | None, *, where: str = "tool"
) -> dict[str, Any]:
    """Build the object schema of a tool's parameters from either declaration form.

    In the dict form, a parameter is required unless its fragment says
    ``"required": false`` or gives a ``default``, so both forms of the same
    tool produce the same schema.
    """
    if parameters is None:
        return {"type": "object", "properties": {}}
    if isinstance(parameters, Mapping):
        return _schema_from_dict(parameters, where)
    if not isinstance(parameters, list | tuple):
        raise PluginDeclarationError(
            f"{where}: parameters must be a list of ToolParameterInfo or a dict, "
            f"not {type(parameters).__name__}"
        )
    properties: dict[str, Any] = {}
    required: list[str] = []
    for info in parameters:
        if not isinstance(info, ToolParameterInfo):
            raise PluginDeclarationError(
                f"{where}: every parameter must be a ToolParameterInfo, got {type(info).__name__}"
            )
        _check_parameter(info, where)
        if info.name in properties:
            raise PluginDeclarationError(f"{where}: parameter {info.name!r} is declared twice")
        properties[info.name] = info.to_schema()
        if info.required:
            required.append(info.name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _schema_from_dict(parameters: Mapping[str, Any], where: str) -> dict[str, Any]:
    if parameters.get("type") == "object" or "properties" in parameters:
        schema = deepcopy(dict(parameters))
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        if not isinstance(schema["properties"], dict):
            raise PluginDeclarationError(f"{where}: 'properties' must be a dict of JSON Schemas")
        for name, fragment in schema["properties"].items():
            _check_fragment(str(name), fragment, where)
        return schema
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, raw in parameters.items():
        fragment = deepcopy(dict(raw)) if isinstance(raw, Mapping) else raw
        _check_fragment(str(name), fragment, where)
        is_required = fragment.pop("required", "default" not in fragment)
        if not isinstance(is_required, bool):
            raise PluginDeclarationError(
                f"{where}, parameter {name!r}: 'required' must be true or false"
            )
        properties[str(name)] = fragment
        if is_required:
            required.append(str(name))
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _check_fragment(name: str, fragment: Any, where: str) -> None:
    """Validate one dict-form fragment in place; ``"float"`` becomes ``"number"``."""
    _check_identifier(name, where)
    if not isinstance(fragment, dict):
        raise PluginDeclarationError(
            f"{where}, parameter {name!r}: expected a JSON Schema dict, "
            f"got {type(fragment).__name__}"
        )
    json_type = fragment.get("type")
    if json_type is None:
        return
    if isinstance(json_type, list):
        # A union such as ["string", "null"] is valid JSON Schema; its values go unchecked.
        fragment["type"] = [
            "null" if t == "null" else _param_type(name, t, where).json_type for t in json_type
        ]
        return
    param_type = _param_type(name, json_type, where)
    fragment["type"] = param_type.json_type
    _check_values(name, param_type, fragment.get("enum"), fragment.get("default"), where)


def _param_type(name: str, json_type: Any, where: str) -> ToolParamType:
    try:
        return ToolParamType(json_type)
    except (ValueError, TypeError):
        raise PluginDeclarationError(
            f"{where}, parameter {name!r}: unknown type {json_type!r}; use one of "
            "string, integer, number, boolean, array, object (a list of them, with "
            '"null", for a union)'
        ) from None


def _check_parameter(info: ToolParameterInfo, where: str) -> None:
    _check_identifier(info.name, where)
    _check_values(info.name, info.param_type, info.enum_values, info.default, where)
    if info.required_properties and info.param_type is not ToolParamType.OBJECT:
        raise PluginDeclarationError(
            f"{where}, parameter {info.name!r}: required_properties only applies to OBJECT"
        )


def _check_identifier(name: str, where: str) -> None:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise PluginDeclarationError(
            f"{where}, parameter {name!r}: parameter names must be Python identifiers "
            "(letters, digits and '_', not starting with a digit, not a keyword), because "
            "they are passed to the handler as keyword arguments"
        )


def _check_values(
    name: str, param_type: ToolParamType, enum: Any, default: Any, where: str
) -> None:
    where = f"{where}, parameter {name!r}"
    if enum is not None:
        if not isinstance(enum, list | tuple) or not enum:
            raise PluginDeclarationError(f"{where}: enum_values must be a non-empty list")
        for value in enum:
            if not _matches(param_type, value):
                raise PluginDeclarationError(
                    f"{where}: enum value {value!r} is not of type {param_type.json_type}"
                )
    if default is not None:
        if not _matches(param_type, default):
            raise PluginDeclarationError(
                f"{where}: default {default!r} is not of type {param_type.json_type}"
            )
        if enum and default not in enum:
            raise PluginDeclarationError(
                f"{where}: default {default!r} is not one of the enum values {list(enum)!r}"
            )


def _matches(param_type: ToolParamType, value: Any) -> bool:
    checks: dict[ToolParamType, tuple[type, ...]] = {
        ToolParamType.STRING: (str,),
        ToolParamType.INTEGER: (int,),
        ToolParamType.NUMBER: (int, float),
        ToolParamType.FLOAT: (int, float),
        ToolParamType.BOOLEAN: (bool,),
        ToolParamType.ARRAY: (list, tuple),
        ToolParamType.OBJECT: (dict,),
    }
    if isinstance(value, bool) and param_type is not ToolParamType.BOOLEAN:
        return False
    return isinstance(value, checks[param_type])


def _detailed_description(detailed: str, schema: dict[str, Any]) -> str:
    detailed = inspect.cleandoc(detailed) if detailed else ""
    details = generate_parameter_details(schema)
    if not details or PARAMETER_DETAILS_HEADING in detailed:
        return detailed
    return f"{detailed}\n\n{details}" if detailed else details


def generate_parameter_details(schema: dict[str, Any]) -> str:
    """Render the ``Parameter details:`` section for an object schema ('' if none)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        return ""
    required = set(schema.get("required", []))
    lines = [PARAMETER_DETAILS_HEADING]
    for name, fragment in properties.items():
        if not isinstance(fragment, dict):
            continue
        json_type = fragment.get("type", "string")
        type_text = json_type if isinstance(json_type, str) else "/".join(map(str, json_type))
        segments = [f"- {name}: {type_text}, {'required' if name in required else 'optional'}"]
        description = str(fragment.get("description", "")).strip().rstrip(".")
        if description:
            segments.append(description)
        if fragment.get("enum"):
            segments.append("Allowed values: " + ", ".join(map(_render, fragment["enum"])))
        if "default" in fragment:
            segments.append(f"Default: {_render(fragment['default'])}")
        lines.append(". ".join(segments))
    return "\n".join(lines)


def _render(value: Any) -> str:
    """Render a schema value the way JSON writes it (``true``, not ``True``)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
