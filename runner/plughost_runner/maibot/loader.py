"""Bring a MaiBot SDK 2.x plugin (a ``MaiBotPlugin``) to life the way MaiBot's runner does.

After the loader has imported the module (with ``maibot_sdk`` mapped, see
:mod:`plughost_runner.maibot.imports`) and created the instance, this module:

1. gives it MaiBot's context (``_set_context``), whose capability calls go
   through the runner's bridge;
2. normalizes its configuration from ``config_model`` and plans config.toml
   (:mod:`plughost_runner.maibot.config`);
3. turns the ``TOOL`` entries of the *instance's* ``get_components()`` (so an
   override is honoured) into plughost tool declarations: MaiBot's schema, the
   description MaiBot's host gives the model (the component's ``description``,
   without the SDK's detailed text, which is kept as ``detailed_description``),
   ``chat_scope`` from the entry or its metadata;
4. adapts what a tool returns to MaiBot's reading of it (:func:`tool_result`).

The other component types are registered from the same ``get_components()``
list by the generic component path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from copy import deepcopy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plughost_runner.maibot.config import plan_config
from plughost_sdk.context import CapabilityBridge
from plughost_sdk.declarations import (
    CHAT_SCOPES,
    TOOL_NAME_PATTERN,
    VISIBILITIES,
    ToolDeclaration,
    build_parameters_schema,
)
from plughost_sdk.errors import PluginDeclarationError
from plughost_sdk.maibot.context import PluginContext, PluginPaths, bridge_rpc_call
from plughost_sdk.maibot.plugin import MaiBotPlugin
from plughost_sdk.maibot.types import ToolParameterInfo

__all__ = ["MaiBotSetup", "MaiBotSetupError", "set_up", "tool_declaration", "tool_result"]

TOOL_TYPES = ("TOOL", "ACTION")
# Fields of a MaiBot TOOL entry that the declaration carries in its own fields.
_FOLDED = ("description", "brief_description", "detailed_description", "parameters")
_FOLDED_TOO = ("parameters_raw",)


class MaiBotSetupError(Exception):
    """A load stage failed; ``stage`` names it for the load report."""

    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(reason)
        self.stage = stage
        self.reason = reason


@dataclass(slots=True)
class MaiBotSetup:
    """The tools of a set-up plugin, and the config.toml text the host should write."""

    tools: list[tuple[ToolDeclaration, Callable[..., Any]]] = field(default_factory=list)
    config_file: str | None = None
    config_reason: str = ""


def set_up(
    instance: MaiBotPlugin,
    *,
    plugin_id: str,
    folder: Path,
    config: Mapping[str, Any],
    data_dir: Path,
    temp_dir: Path,
    bridge: CapabilityBridge,
) -> MaiBotSetup:
    """Context, configuration and tools for ``instance`` (before ``on_load``).

    Raises:
        MaiBotSetupError: with stage ``config`` or ``declaration``.
    """
    paths = PluginPaths(data_dir=data_dir, runtime_dir=temp_dir)
    instance._set_context(PluginContext(plugin_id, bridge_rpc_call(bridge, plugin_id), paths))
    try:
        plan = plan_config(instance, folder, config)
        instance.get_config_reload_subscriptions()
    except (ValueError, TypeError) as exc:
        raise MaiBotSetupError("config", f"the configuration is invalid: {exc}") from None
    instance.set_plugin_config(plan.config)
    try:
        components = instance.get_components()
    except Exception as exc:
        raise MaiBotSetupError("declaration", f"get_components() raised {exc!r}") from None
    setup = MaiBotSetup(config_file=plan.file_text, config_reason=plan.reason)
    for entry in components:
        if not isinstance(entry, Mapping) or str(entry.get("type", "")).upper() not in TOOL_TYPES:
            continue
        declaration = _declaration(entry, type(instance).__name__)
        function = getattr(instance, declaration.handler_name, None)
        if not callable(function):
            raise MaiBotSetupError(
                "declaration",
                f"tool {declaration.name!r} names handler {declaration.handler_name!r}, "
                "which the plugin does not have",
            )
        setup.tools.append((declaration, function))
    return setup


def _declaration(entry: Mapping[str, Any], owner: str) -> ToolDeclaration:
    try:
        return tool_declaration(entry)
    except (PluginDeclarationError, ValueError) as exc:
        raise MaiBotSetupError("declaration", f"plugin {owner}: {exc}") from None


def tool_declaration(entry: Mapping[str, Any]) -> ToolDeclaration:
    """A plughost tool declaration from one MaiBot ``TOOL`` component dict.

    Raises:
        PluginDeclarationError: a bad name, schema, visibility or chat scope.
    """
    name = str(entry.get("name") or "").strip()
    where = f"tool {name!r}"
    if not TOOL_NAME_PATTERN.match(name):
        raise PluginDeclarationError(
            f"{where}: names may use only letters, digits, '_' and '-', at most 64 characters"
        )
    metadata = dict(entry.get("metadata") or {})
    schema = build_parameters_schema(maibot_parameters_schema(metadata), where=where)
    # MaiBot's host gives the model this text alone; the SDK's detailed description
    # (with its 参数说明 list) is kept beside it but never sent to the model.
    fallback = f"工具 {name}"
    brief = str(
        metadata.get("description") or metadata.get("brief_description") or fallback
    ).strip()
    brief = brief or fallback
    detailed = str(metadata.get("detailed_description") or "").strip()
    visibility = str(metadata.get("visibility") or "").strip().lower()
    if not visibility:
        visibility = "visible" if metadata.get("core_tool") else "deferred"
    if visibility not in VISIBILITIES:
        raise PluginDeclarationError(
            f"{where}: visibility {visibility!r} is not one of {', '.join(VISIBILITIES)}"
        )
    scope = str(entry.get("chat_scope") or metadata.get("chat_scope") or "all").strip().lower()
    if scope not in CHAT_SCOPES:
        raise PluginDeclarationError(
            f"{where}: chat_scope {scope!r} is not one of {', '.join(CHAT_SCOPES)}"
        )
    kept = {k: deepcopy(v) for k, v in metadata.items() if k not in _FOLDED + _FOLDED_TOO}
    kept.update(visibility=visibility, core_tool=visibility == "visible", chat_scope=scope)
    if isinstance(entry.get("allowed_session"), list):
        kept["allowed_session"] = list(entry["allowed_session"])
    return ToolDeclaration(
        name=name,
        handler_name=str(metadata.get("handler_name") or name),
        description=brief,
        brief_description=brief,
        detailed_description=detailed,
        parameters_schema=schema,
        visibility=visibility,
        metadata=kept,
        legacy_action=bool(metadata.get("legacy_action")),
    )


def maibot_parameters_schema(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The object schema MaiBot's SDK derives from a TOOL entry's parameters."""
    raw = metadata.get("parameters_raw")
    if isinstance(raw, Mapping) and raw:
        if raw.get("type") == "object" or "properties" in raw:
            return deepcopy(dict(raw))
        properties: dict[str, Any] = {}
        required: list[str] = []
        for key, fragment in raw.items():
            if isinstance(fragment, Mapping):
                fragment = deepcopy(dict(fragment))
                if bool(fragment.pop("required", False)):
                    required.append(str(key))
                properties[str(key)] = fragment
        return _object(properties, required)
    typed = [
        ToolParameterInfo.model_validate(p)
        for p in metadata.get("parameters") or []
        if isinstance(p, Mapping)
    ]
    if not typed:
        return {"type": "object", "properties": {}}
    return _object(
        {p.name: p.to_parameter_schema() for p in typed}, [p.name for p in typed if p.required]
    )


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def tool_result(value: Any) -> Any:
    """Read a MaiBot tool's return value as MaiBot's host does, into plughost's result shapes.

    - a dict: ``success`` (default True), ``content`` or else ``message`` as the text,
      ``error`` or else ``message`` when it failed; the rest kept;
    - a list or tuple starting with a bool: ``(ok, message, ...)``; the message
      is the content on success and the error on failure;
    - None: no text; anything else: its ``str()``.
    """
    if isinstance(value, Mapping):
        if not isinstance(value.get("stop_after_execution", False), bool):
            return {
                "success": False,
                "error": "插件工具返回字段 `stop_after_execution` 必须为布尔值。",
            }
        success = bool(value.get("success", True))
        content = str(value.get("content", value.get("message", "")) or "").strip()
        error = ""
        if not success:
            error = str(value.get("error", value.get("message", "插件工具执行失败")) or "").strip()
        return {**value, "success": success, "content": content, "error": error}
    if isinstance(value, list | tuple) and value and isinstance(value[0], bool):
        ok = value[0]
        text = "" if len(value) < 2 or value[1] is None else str(value[1]).strip()
        return {"success": ok, "content": text if ok else "", "error": "" if ok else text}
    if value is None or isinstance(value, str):
        return None if value is None else value.strip()
    return str(value).strip()
