"""A MaiBot plugin's configuration: normalized from its model, and the config.toml to write.

MaiBot writes ``config.toml`` from the plugin's ``config_model`` when there is
none, and adds the fields a newer model declares (keeping the user's values);
so does plughost. The runner only *plans* the file, because the plugin folder
is the host's (the runner may not write it): :func:`plan_config` returns the
normalized configuration and, when the file must change, its new text; the
host writes it (see ``PluginHost``), so the file watcher sees a version it
already knows.

A generated file carries each field's ``description`` as a comment above it,
and each section's docstring above the section. An existing file is updated in
place with tomlkit, so the user's comments and layout survive; a file whose
``[plugin] config_version`` is older than the model's is rebuilt on the model's
layout first (fields the model dropped disappear), as MaiBot does.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
from pydantic import BaseModel
from tomlkit.items import Table

from plughost_sdk.maibot.config import (
    PluginConfigVersionError,
    compare_config_versions,
    extract_plugin_config_version,
    is_plugin_config_class,
    merge_plugin_config_data,
    rebuild_plugin_config_data,
)
from plughost_sdk.maibot.plugin import MaiBotPlugin

__all__ = ["ConfigPlan", "plan_config", "render_new_config"]

log = logging.getLogger(__name__)
CONFIG_FILE = "config.toml"


@dataclass(frozen=True, slots=True)
class ConfigPlan:
    """What the plugin's configuration is, and what config.toml must become (None: unchanged)."""

    config: dict[str, Any]
    file_text: str | None
    reason: str = ""


def plan_config(instance: MaiBotPlugin, folder: Path, raw: Mapping[str, Any]) -> ConfigPlan:
    """Normalize ``raw`` (the parsed config.toml, {} when missing) for ``instance``.

    Raises:
        ValueError: the configuration does not validate against the model.
    """
    model = type(instance).get_config_model()
    if model is None:
        return ConfigPlan(dict(raw), None)
    defaults = type(instance).build_default_config()
    path = folder / CONFIG_FILE
    if not raw and not path.exists():
        config, _ = instance.normalize_plugin_config(defaults)
        return ConfigPlan(config, render_new_config(model, config), "created from the config model")
    if _older(raw, defaults):
        rebuilt = rebuild_plugin_config_data(defaults, raw)
        config, _ = instance.normalize_plugin_config(rebuilt)
        return ConfigPlan(config, render_new_config(model, config), "rebuilt for a newer model")
    merged, _ = merge_plugin_config_data(defaults, raw)
    config, _ = instance.normalize_plugin_config(merged)
    if not _lacks(raw, defaults):
        return ConfigPlan(config, None)
    return ConfigPlan(config, _updated_text(path, model, merged), "new fields added")


def _lacks(raw: Mapping[str, Any], defaults: Mapping[str, Any]) -> bool:
    """Whether ``raw`` lacks a key the defaults give a value (None cannot be written)."""
    for key, default in defaults.items():
        if key not in raw:
            if default is not None:
                return True
        elif (
            isinstance(default, Mapping)
            and isinstance(raw[key], Mapping)
            and _lacks(raw[key], default)
        ):
            return True
    return False


def _older(raw: Mapping[str, Any], defaults: Mapping[str, Any]) -> bool:
    try:
        latest = extract_plugin_config_version(defaults)
        current = extract_plugin_config_version(raw)
    except PluginConfigVersionError:
        return False
    return compare_config_versions(current, latest)


def render_new_config(model: type[BaseModel], config: Mapping[str, Any]) -> str:
    """A config.toml for ``config``, with the model's descriptions as comments."""
    document = tomlkit.document()
    _fill(document, model, config)
    return tomlkit.dumps(document)


def _fill(container: Any, model: type[BaseModel] | None, values: Mapping[str, Any]) -> None:
    """Add ``values`` to a tomlkit document or table: plain keys first, then sections."""
    fields = model.model_fields if model is not None else {}
    plain = [k for k, v in values.items() if not isinstance(v, Mapping)]
    sections = [k for k, v in values.items() if isinstance(v, Mapping)]
    for key in plain:
        value = _toml_value(values[key])
        info = fields.get(key)
        if info is not None and info.description:
            for line in info.description.splitlines():
                container.add(tomlkit.comment(line))
        if value is None:
            container.add(tomlkit.comment(f"{key} = (unset)"))
        else:
            container.add(key, value)
    for key in sections:
        info = fields.get(key)
        sub = _section_model(info.annotation if info is not None else None)
        table = tomlkit.table()
        doc = (info.description if info is not None else None) or (
            (sub.__doc__ or "").strip() if sub is not None else ""
        )
        for line in (doc or "").splitlines():
            table.add(tomlkit.comment(line.strip()))
        _fill(table, sub, values[key])
        container.add(key, table)


def _section_model(annotation: Any) -> type[BaseModel] | None:
    """The model of a nested section, when the field is one."""
    return annotation if is_plugin_config_class(annotation) else None


def _toml_value(value: Any) -> Any:
    """A value TOML can hold; None has no TOML form."""
    if isinstance(value, tuple | set | frozenset):
        return [_toml_value(v) for v in value]
    if isinstance(value, list):
        return [_toml_value(v) for v in value if v is not None]
    if hasattr(value, "value") and isinstance(getattr(value, "value", None), str | int | float):
        return value.value  # an enum member
    return value


def _updated_text(path: Path, model: type[BaseModel], merged: Mapping[str, Any]) -> str:
    """The existing file with the missing keys added, comments and order kept."""
    try:
        document = tomlkit.parse(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        log.warning("cannot update %s in place (%s); writing it anew", path, exc)
        return render_new_config(model, merged)
    _add_missing(document, model, merged)
    return tomlkit.dumps(document)


def _add_missing(container: Any, model: type[BaseModel] | None, values: Mapping[str, Any]) -> None:
    fields = model.model_fields if model is not None else {}
    for key, value in values.items():
        info = fields.get(key)
        sub = _section_model(info.annotation if info is not None else None)
        if key in container:
            existing = container[key]
            if isinstance(existing, Table | dict) and isinstance(value, Mapping):
                _add_missing(existing, sub, value)
            continue
        if isinstance(value, Mapping):
            table = tomlkit.table()
            _fill(table, sub, value)
            container.add(key, table)
            continue
        converted = _toml_value(value)
        if converted is None:
            continue
        if info is not None and info.description:
            for line in info.description.splitlines():
                container.add(tomlkit.comment(line))
        container.add(key, converted)
