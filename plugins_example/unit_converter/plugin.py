"""Convert between units of length, mass and temperature.

A plain (non-async) handler: the runner runs it in a worker thread, so it never
blocks other calls. ``read_only=True`` tells the host it changes nothing.
"""

from __future__ import annotations

from typing import Any

from plughost_sdk import Plugin, Tool, ToolError
from plughost_sdk.types import ToolParameterInfo, ToolParamType

# unit -> (dimension, factor to the dimension's base unit). Temperatures are affine
# and handled separately.
LINEAR_UNITS: dict[str, tuple[str, float]] = {
    "mm": ("length", 0.001),
    "cm": ("length", 0.01),
    "m": ("length", 1.0),
    "km": ("length", 1000.0),
    "in": ("length", 0.0254),
    "ft": ("length", 0.3048),
    "mi": ("length", 1609.344),
    "g": ("mass", 0.001),
    "kg": ("mass", 1.0),
    "oz": ("mass", 0.028349523125),
    "lb": ("mass", 0.45359237),
}
TEMPERATURE_UNITS = ("c", "f", "k")
UNITS = [*LINEAR_UNITS, *TEMPERATURE_UNITS]


def _dimension(unit: str) -> str:
    return "temperature" if unit in TEMPERATURE_UNITS else LINEAR_UNITS[unit][0]


def _to_kelvin(value: float, unit: str) -> float:
    if unit == "c":
        return value + 273.15
    if unit == "f":
        return (value - 32) * 5 / 9 + 273.15
    return value


def _from_kelvin(value: float, unit: str) -> float:
    if unit == "c":
        return value - 273.15
    if unit == "f":
        return (value - 273.15) * 9 / 5 + 32
    return value


def convert(value: float, from_unit: str, to_unit: str) -> float:
    """Convert ``value``; both units must measure the same dimension.

    Raises:
        ToolError: an unknown unit, or units of different dimensions.
    """
    for unit in (from_unit, to_unit):
        if unit not in UNITS:
            raise ToolError(f"unknown unit {unit!r}; use one of: {', '.join(UNITS)}")
    if _dimension(from_unit) != _dimension(to_unit):
        raise ToolError(
            f"cannot convert {_dimension(from_unit)} ({from_unit}) "
            f"to {_dimension(to_unit)} ({to_unit})"
        )
    if from_unit in TEMPERATURE_UNITS:
        kelvin = _to_kelvin(value, from_unit)
        if kelvin < 0:
            raise ToolError(f"{value} {from_unit} is below absolute zero")
        return _from_kelvin(kelvin, to_unit)
    return value * LINEAR_UNITS[from_unit][1] / LINEAR_UNITS[to_unit][1]


class UnitConverterPlugin(Plugin):
    """Unit conversions, with no state and no side effects."""

    @Tool(
        "unit_convert",
        brief_description="Convert a value between units of length, mass or temperature",
        parameters=[
            ToolParameterInfo(
                name="value", param_type=ToolParamType.NUMBER, description="The amount"
            ),
            ToolParameterInfo(
                name="from_unit", description="Unit of the amount", enum_values=UNITS
            ),
            ToolParameterInfo(name="to_unit", description="Unit to convert to", enum_values=UNITS),
        ],
        read_only=True,
    )
    def unit_convert(
        self, value: float, from_unit: str, to_unit: str, **kwargs: Any
    ) -> dict[str, Any]:
        """Convert and report the result rounded for reading, exact for reuse."""
        result = convert(float(value), from_unit, to_unit)
        return {
            "content": f"{value:g} {from_unit} = {result:.6g} {to_unit}",
            "value": result,
            "unit": to_unit,
        }


def create_plugin() -> UnitConverterPlugin:
    return UnitConverterPlugin()
