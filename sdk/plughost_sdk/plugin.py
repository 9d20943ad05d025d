"""The plugin base class every plugin subclasses.

A plugin folder's ``plugin.py`` defines a :class:`Plugin` subclass with
``@Tool`` methods (and ``@Resource``, ``@Prompt``, ``@Command``, ``@EventHandler``,
``@HookHandler``, ``@API`` ones) and a module-level ``create_plugin()`` that
returns an instance. Declarations are collected and validated when the class is
defined, so a bad declaration fails at import with a message naming the
plugin, the component and the parameter.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel

from plughost_sdk.components import ComponentDeclaration, collect_components
from plughost_sdk.context import PluginConfig, PluginContext
from plughost_sdk.declarations import ToolDeclaration, collect_declarations
from plughost_sdk.resources import (
    PromptDeclaration,
    ResourceDeclaration,
    collect_prompts,
    collect_resources,
)

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
    __plughost_components__: ClassVar[list[ComponentDeclaration]] = []
    __plughost_resources__: ClassVar[list[ResourceDeclaration]] = []
    __plughost_prompts__: ClassVar[list[PromptDeclaration]] = []

    ctx: PluginContext

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.__plughost_declarations__ = collect_declarations(cls)
        cls.__plughost_components__ = collect_components(cls)
        cls.__plughost_resources__ = collect_resources(cls)
        cls.__plughost_prompts__ = collect_prompts(cls)

    @classmethod
    def tool_declarations(cls) -> list[ToolDeclaration]:
        """The validated declarations of this plugin's tools, in definition order."""
        return list(cls.__plughost_declarations__)

    @classmethod
    def component_declarations(cls) -> list[ComponentDeclaration]:
        """The plugin's commands, event handlers, hook handlers, APIs and home cards."""
        return list(cls.__plughost_components__)

    def get_components(self) -> list[dict[str, Any]]:
        """Every non-tool component as a dict of MaiBot's shape; the runner reads this at load.

        Override it to change what is registered (a plugin written for MaiBot may);
        entries of type ``TOOL`` or ``ACTION`` are ignored here, tools are declared
        with ``@Tool``.
        """
        return [declaration.to_wire() for declaration in self.component_declarations()]

    @classmethod
    def resource_declarations(cls) -> list[ResourceDeclaration]:
        """The validated ``@Resource`` declarations (resources and templates), in order."""
        return list(cls.__plughost_resources__)

    @classmethod
    def prompt_declarations(cls) -> list[PromptDeclaration]:
        """The validated ``@Prompt`` declarations, in definition order."""
        return list(cls.__plughost_prompts__)

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
