"""``maibot_sdk.config``: typed plugin configuration, MaiBot-style.

A MaiBot plugin declares ``config_model``, a :class:`PluginConfigBase` subclass
whose every field has a default; ``self.config`` is then a validated instance
of it, filled with defaults whether or not ``config.toml`` exists. The helpers
here are the pure dict operations behind that: defaults from the model, filling
what a file lacks, rebuilding an older file on the newer layout. Reading and
writing the file is the runner's job (``plughost_runner.maibot.config``).

MaiBot keeps a version in ``[plugin] config_version``: when the model's default
is newer than the file's, the file is rebuilt on the model's layout, keeping the
user's values whose type still fits.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from copy import deepcopy
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Field",
    "PluginConfigBase",
    "PluginConfigVersionError",
    "build_plugin_default_config",
    "compare_config_versions",
    "extract_plugin_config_version",
    "is_plugin_config_class",
    "merge_plugin_config_data",
    "rebuild_plugin_config_data",
    "validate_plugin_config",
]

ConfigT = TypeVar("ConfigT", bound="PluginConfigBase")


class PluginConfigVersionError(ValueError):
    """The configuration has no usable ``[plugin] config_version``."""


class PluginConfigBase(BaseModel):
    """Base of a plugin's configuration model; give every field a default.

    Unknown keys are ignored (a newer file still loads), and assignments are
    validated, as in MaiBot.
    """

    model_config = ConfigDict(validate_assignment=True, extra="ignore")

    __ui_label__: ClassVar[str] = ""
    __ui_icon__: ClassVar[str] = ""
    __ui_order__: ClassVar[int] = 0
    __ui_i18n__: ClassVar[dict[str, dict[str, str]]] = {}


def is_plugin_config_class(candidate: Any) -> bool:
    """Whether ``candidate`` is a :class:`PluginConfigBase` subclass."""
    return inspect.isclass(candidate) and issubclass(candidate, PluginConfigBase)


def build_plugin_default_config(config_class: type[PluginConfigBase]) -> dict[str, Any]:
    """The model's defaults as a plain dict.

    Raises:
        ValueError: a field has no default, so no configuration can be built without a file.
    """
    try:
        instance = config_class()
    except Exception as exc:
        raise ValueError(
            f"config model {config_class.__name__} needs a default for every field"
        ) from exc
    return instance.model_dump(mode="python")


def extract_plugin_config_version(config_data: Mapping[str, Any]) -> str:
    """Return ``plugin.config_version`` as text.

    Raises:
        PluginConfigVersionError: no ``[plugin]`` section or no version in it.
    """
    section = config_data.get("plugin")
    if not isinstance(section, Mapping):
        raise PluginConfigVersionError("the configuration has no [plugin] section")
    version = str(section.get("config_version") or "").strip()
    if not version:
        raise PluginConfigVersionError("the configuration has no plugin.config_version")
    return version


def compare_config_versions(older: str, newer: str) -> bool:
    """Whether version ``newer`` is greater than ``older`` (numeric, dotted)."""

    def parts(text: str) -> tuple[int, ...]:
        numbers = []
        for piece in text.strip().lstrip("vV").split("."):
            digits = "".join(ch for ch in piece if ch.isdigit())
            numbers.append(int(digits) if digits else 0)
        return tuple(numbers)

    return parts(newer) > parts(older)


def merge_plugin_config_data(
    default_config: Mapping[str, Any], current_config: Mapping[str, Any]
) -> tuple[dict[str, Any], bool]:
    """Fill what ``current_config`` lacks from the defaults; return (merged, changed)."""
    merged = deepcopy(dict(current_config))
    return merged, _fill_missing(merged, default_config)


def rebuild_plugin_config_data(
    default_config: Mapping[str, Any], current_config: Mapping[str, Any]
) -> dict[str, Any]:
    """The defaults' layout with the user's values kept where they still fit.

    Keys the model dropped disappear, new keys get their defaults, and the
    version is the model's.
    """
    rebuilt = deepcopy(dict(default_config))
    _overlay(rebuilt, current_config)
    return rebuilt


def validate_plugin_config(config_class: type[ConfigT], config_data: Mapping[str, Any]) -> ConfigT:
    """Validate ``config_data`` into an instance of the model."""
    return config_class.model_validate(dict(config_data))


def _fill_missing(target: dict[str, Any], defaults: Mapping[str, Any]) -> bool:
    changed = False
    for key, default in defaults.items():
        if key not in target:
            target[key] = deepcopy(default)
            changed = True
        elif isinstance(target[key], dict) and isinstance(default, Mapping):
            changed = _fill_missing(target[key], default) or changed
    return changed


def _overlay(target: dict[str, Any], source: Mapping[str, Any]) -> None:
    for key, value in source.items():
        if key not in target or key == "config_version":
            continue
        current = target[key]
        if isinstance(current, dict) and isinstance(value, Mapping):
            _overlay(current, value)
        elif _fits(current, value):
            target[key] = deepcopy(value)


def _fits(default: Any, value: Any) -> bool:
    """Whether an old value may replace a new default (MaiBot's rule: same kind of value)."""
    if default is None:
        return True
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, int | float)
    return isinstance(value, type(default))
