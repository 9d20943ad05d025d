"""Parameter declarations for ``@Tool``: ToolParamType and ToolParameterInfo.

Each parameter becomes one property of the tool's JSON Schema. The mapping is a
public contract (see docs/plugin-authors.md): STRING, INTEGER, NUMBER, BOOLEAN,
ARRAY and OBJECT map to the JSON Schema type of the same name; FLOAT is an
alias of NUMBER.
"""

from __future__ import annotations

from copy import deepcopy
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ToolParamType", "ToolParameterInfo"]


class ToolParamType(StrEnum):
    """The type of one tool parameter."""

    STRING = "string"
    INTEGER = "integer"
    NUMBER = "number"
    FLOAT = "float"
    BOOLEAN = "boolean"
    ARRAY = "array"
    OBJECT = "object"

    @property
    def json_type(self) -> str:
        """The JSON Schema ``type`` this parameter type maps to."""
        return "number" if self is ToolParamType.FLOAT else self.value


class ToolParameterInfo(BaseModel):
    """One parameter of a tool, as a plugin author declares it.

    Args:
        name: The parameter name; must be a Python identifier (it becomes a kwarg).
        param_type: Its type.
        description: What the model should put here.
        required: Whether the model must supply it.
        enum_values: The only values allowed, if any.
        default: The value the handler uses when the model leaves it out.
        items_schema: JSON Schema of each element, for ARRAY.
        properties: JSON Schemas of the fields, for OBJECT.
        required_properties: Required fields, for OBJECT.
        additional_properties: Whether (or how) extra fields are allowed, for OBJECT.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    param_type: ToolParamType = ToolParamType.STRING
    description: str = ""
    required: bool = True
    enum_values: list[Any] | None = None
    default: Any = None
    items_schema: dict[str, Any] | None = None
    properties: dict[str, dict[str, Any]] | None = None
    required_properties: list[str] = Field(default_factory=list)
    additional_properties: bool | dict[str, Any] | None = None

    def to_schema(self) -> dict[str, Any]:
        """Return this parameter's JSON Schema fragment."""
        schema: dict[str, Any] = {"type": self.param_type.json_type}
        if self.description:
            schema["description"] = self.description
        if self.enum_values:
            schema["enum"] = list(self.enum_values)
        if self.default is not None:
            schema["default"] = deepcopy(self.default)
        if self.param_type is ToolParamType.ARRAY and self.items_schema is not None:
            schema["items"] = deepcopy(self.items_schema)
        if self.param_type is ToolParamType.OBJECT:
            schema["properties"] = deepcopy(self.properties or {})
            if self.required_properties:
                schema["required"] = list(self.required_properties)
            if self.additional_properties is not None:
                schema["additionalProperties"] = deepcopy(self.additional_properties)
        return schema
