"""``maibot_sdk.plugin``: MaiBotPlugin, the base class of a MaiBot SDK 2.x plugin.

It is a plughost :class:`~plughost_sdk.plugin.Plugin` with MaiBot's surface:
``self.ctx`` is the MaiBot-shaped context, ``self.config`` the validated
``config_model`` instance, ``get_components()`` MaiBot's list of component
dicts (the runner reads the instance's, so an override is honoured), plus
``set_plugin_config``, ``get_plugin_config_data``, ``config_reload_subscriptions``
and dynamic APIs.

Two differences, both lenient: the lifecycle methods default to doing nothing
(MaiBot refuses a plugin that does not define all three), and a config model
without ``[plugin] config_version`` is accepted (MaiBot refuses it).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, cast

from plughost_sdk.maibot.components import collect_components, collect_llm_providers
from plughost_sdk.maibot.config import (
    PluginConfigBase,
    build_plugin_default_config,
    is_plugin_config_class,
    merge_plugin_config_data,
    validate_plugin_config,
)
from plughost_sdk.maibot.context import PluginContext
from plughost_sdk.maibot.types import normalize_config_reload_subscription
from plughost_sdk.plugin import Plugin

__all__ = ["MaiBotPlugin"]


class MaiBotPlugin(Plugin):
    """Base class of a plugin written for MaiBot's SDK 2.x."""

    config_reload_subscriptions: ClassVar[Iterable[str]] = ()
    """Bot-level configuration scopes (``"bot"``, ``"model"``) delivered to ``on_config_update``."""

    config_model: ClassVar[type[PluginConfigBase] | None] = None
    """The plugin's configuration model; ``self.config`` is an instance of it."""

    def __init__(self) -> None:
        self._ctx: PluginContext | None = None
        self._dynamic_api_components: dict[str, dict[str, Any]] = {}
        self._dynamic_api_handlers: dict[str, Callable[..., Any]] = {}
        self._plugin_config_data: dict[str, Any] = {}
        self._plugin_config_instance: PluginConfigBase | None = None

    # -- context ---------------------------------------------------------------

    @property  # type: ignore[override]  # MaiBot's context, not plughost's
    def ctx(self) -> PluginContext:
        """The plugin's context, set by the runner before ``on_load``.

        Raises:
            RuntimeError: outside a runner, before the context is set.
        """
        ctx = getattr(self, "_ctx", None)
        if ctx is None:
            raise RuntimeError("the plugin context is not set; this only works inside a runner")
        return cast(PluginContext, ctx)

    @ctx.setter
    def ctx(self, value: PluginContext) -> None:
        self._set_context(value)

    def _set_context(self, ctx: PluginContext) -> None:
        self._ctx = ctx

    def _get_logger(self) -> logging.Logger:
        ctx = getattr(self, "_ctx", None)
        return ctx.logger if ctx is not None else logging.getLogger("maibot_sdk.plugin")

    # -- configuration -----------------------------------------------------------

    @classmethod
    def get_config_model(cls) -> type[PluginConfigBase] | None:
        """The declared config model, or None."""
        model = cls.config_model
        return model if is_plugin_config_class(model) else None

    @classmethod
    def has_config_model(cls) -> bool:
        """Whether the plugin declares a config model."""
        return cls.get_config_model() is not None

    @classmethod
    def build_default_config(cls) -> dict[str, Any]:
        """The model's defaults as a dict ({} without a model)."""
        model = cls.get_config_model()
        return build_plugin_default_config(model) if model is not None else {}

    def get_default_config(self) -> dict[str, Any]:
        """Same as :meth:`build_default_config`."""
        return type(self).build_default_config()

    def normalize_plugin_config(
        self, config_data: Mapping[str, Any] | None
    ) -> tuple[dict[str, Any], bool]:
        """Fill ``config_data`` from the model's defaults and validate it.

        Returns:
            The normalized configuration, and whether filling or validation changed it.

        Raises:
            ValueError: the data does not validate against the model.
        """
        raw = dict(config_data) if isinstance(config_data, Mapping) else {}
        model = type(self).get_config_model()
        if model is None:
            return raw, False
        defaults = type(self).build_default_config()
        if not raw:
            return validate_plugin_config(model, defaults).model_dump(mode="python"), bool(defaults)
        merged, changed = merge_plugin_config_data(defaults, raw)
        normalized = validate_plugin_config(model, merged).model_dump(mode="python")
        return normalized, changed or normalized != merged

    def set_plugin_config(self, config: dict[str, Any]) -> None:
        """Make ``config`` (normalized) the plugin's configuration.

        A configuration that does not validate leaves ``self.config`` unset and
        only the raw dict kept, as in MaiBot (a warning is logged).
        """
        try:
            normalized, _ = self.normalize_plugin_config(config)
        except ValueError as exc:
            self._get_logger().warning("plugin configuration does not validate: %s", exc)
            self._plugin_config_data, self._plugin_config_instance = dict(config), None
            return
        self._plugin_config_data = normalized
        model = type(self).get_config_model()
        self._plugin_config_instance = (
            validate_plugin_config(model, normalized) if model is not None else None
        )

    @property  # the typed model, not plughost's dict view
    def config(self) -> PluginConfigBase:  # type: ignore[override]
        """The validated ``config_model`` instance.

        Raises:
            RuntimeError: the plugin declares no ``config_model``, or it is not set yet.
        """
        if not type(self).has_config_model():
            raise RuntimeError("this plugin declares no config_model, so self.config is unset")
        if self._plugin_config_instance is None:
            raise RuntimeError("the plugin configuration is not set yet")
        return self._plugin_config_instance

    def get_plugin_config_data(self) -> dict[str, Any]:
        """A copy of the plugin's configuration as a dict."""
        return dict(self._plugin_config_data)

    def get_config_reload_subscriptions(self) -> list[str]:
        """The normalized ``config_reload_subscriptions`` (a sorted subset of bot, model).

        Raises:
            TypeError: it is a string or not iterable.
            ValueError: it names another scope.
        """
        raw = type(self).config_reload_subscriptions
        if isinstance(raw, str) or not isinstance(raw, Iterable):
            raise TypeError("config_reload_subscriptions must be a collection such as ('bot',)")
        return sorted({normalize_config_reload_subscription(scope) for scope in raw})

    # -- components ----------------------------------------------------------------

    def get_components(self) -> list[dict[str, Any]]:
        """Every component as MaiBot reports it: decorated ones by method name, then dynamic."""
        return collect_components(self) + self.get_dynamic_api_components()

    def get_llm_providers(self) -> list[dict[str, Any]]:
        """The ``@LLMProvider`` methods of this plugin, in MaiBot's dict shape."""
        return collect_llm_providers(self)

    def register_dynamic_api(
        self,
        name: str,
        handler: Callable[..., Any],
        *,
        description: str = "",
        version: str = "1",
        public: bool = False,
        handler_name: str = "",
        **metadata: Any,
    ) -> dict[str, Any]:
        """Declare an API at run time; publish the set with :meth:`sync_dynamic_apis`.

        Raises:
            ValueError: empty name.
        """
        name = str(name or "").strip()
        if not name:
            raise ValueError("a dynamic API needs a name")
        version = str(version or "1").strip() or "1"
        handler_name = str(handler_name or f"dynamic_api__{name}__{version}").strip()
        details = {
            "description": description,
            "version": version,
            "public": bool(public),
            "dynamic": True,
            "handler_name": handler_name,
            **metadata,
        }
        self._dynamic_api_components[f"{name}@{version}"] = {
            "name": name,
            "type": "API",
            "metadata": details,
        }
        self._dynamic_api_handlers[handler_name] = handler
        return {"name": name, "type": "API", "metadata": dict(details)}

    def unregister_dynamic_api(self, name: str, *, version: str = "1") -> bool:
        """Forget a dynamic API; False when there was none."""
        key = f"{str(name or '').strip()}@{str(version or '1').strip() or '1'}"
        component = self._dynamic_api_components.pop(key, None)
        if component is None:
            return False
        handler_name = str(component["metadata"].get("handler_name") or "")
        still_used = any(
            c["metadata"].get("handler_name") == handler_name
            for c in self._dynamic_api_components.values()
        )
        if handler_name and not still_used:
            self._dynamic_api_handlers.pop(handler_name, None)
        return True

    def clear_dynamic_apis(self) -> None:
        """Forget every dynamic API."""
        self._dynamic_api_components.clear()
        self._dynamic_api_handlers.clear()

    def get_dynamic_api_components(self) -> list[dict[str, Any]]:
        """The dynamic APIs as component dicts."""
        return [
            {"name": c["name"], "type": c["type"], "metadata": dict(c["metadata"])}
            for c in self._dynamic_api_components.values()
        ]

    async def sync_dynamic_apis(self, *, offline_reason: str = "动态 API 已下线") -> bool:
        """Tell the host this plugin's current dynamic APIs (capability ``api.replace_dynamic``)."""
        return await self.ctx.api.replace_dynamic_apis(
            self.get_dynamic_api_components(), offline_reason=offline_reason
        )

    async def invoke_component(self, component_name: str, **kwargs: Any) -> Any:
        """Run a dynamic API's handler (the runner's fallback for components without a method).

        Raises:
            AttributeError: no dynamic handler has that name.
        """
        handler = self._dynamic_api_handlers.get(component_name)
        if handler is None:
            # Called by API name (plughost's dispatch) rather than by handler name (MaiBot's):
            # find the API and pass what MaiBot's host passes to a dynamic API.
            for component in reversed(self._dynamic_api_components.values()):
                details = component["metadata"]
                if component["name"] == component_name:
                    handler = self._dynamic_api_handlers.get(str(details.get("handler_name")))
                    kwargs.setdefault("__maibot_api_name__", component_name)
                    kwargs.setdefault(
                        "__maibot_api_full_name__", f"{self.ctx.plugin_id}.{component_name}"
                    )
                    kwargs.setdefault("__maibot_api_version__", details.get("version", "1"))
                    break
        if handler is None:
            raise AttributeError(f"the plugin has no dynamic component handler {component_name!r}")
        result = handler(**kwargs)
        return await result if inspect.isawaitable(result) else result
