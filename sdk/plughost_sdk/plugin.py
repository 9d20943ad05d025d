"""The plugin base class every plugin subclasses.

A plugin folder's ``plugin.py`` defines a :class:`Plugin` subclass with
``@Tool`` methods and a module-level ``create_plugin()`` that returns an
instance. Tool declarations are collected and validated when the class is
defined, so a bad declaration fails at import with a message naming the
plugin, the tool and the parameter.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel

from plughost_sdk.context import PluginConfig, PluginContext
from plughost_sdk.declarations import ToolDeclaration, collect_declarations

__all__ = ["Plugin"]


class Plugin:
    """Base class of a plugin.

    Override the async lifecycle hooks you need; the defaults do nothing.
    Set ``config_model`` to a pydantic model to have ``config.toml`` validated
    before ``on_load`` and before every ``on_config_update``: an invalid
    edit is then rejected and the old configuration stays.
    """

    config_model: ClassVar[type[BaseModel] | None] = None
    __plughost_declarations__: ClassVar[list[ToolDeclaration]] = []

    ctx: PluginContext

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.__plughost_declarations__ = collect_declarations(cls)

    @classmethod
    def tool_declarations(cls) -> list[ToolDeclaration]:
        """The validated declarations of this plugin's tools, in definition order."""
        return list(cls.__plughost_declarations__)

    @property
    def config(self) -> PluginConfig:
        """The plugin's configuration (``config.toml``), same as ``self.ctx.config``."""
        return self.ctx.config

    async def on_load(self) -> None:
        """Run once after the plugin is created and ``ctx`` is set, before any call."""

    async def on_unload(self) -> None:
        """Run once before the plugin is stopped or replaced by a new version."""

    async def on_config_update(self, scope: str, config_data: dict[str, Any], version: str) -> None:
        """Run after ``config.toml`` changed; ``self.config`` already holds the new values.

        Args:
            scope: ``"self"`` for the plugin's own configuration.
            config_data: The new configuration.
            version: A fingerprint of the new configuration.
        """
