"""MaiBot SDK 2.16 for plughost: what ``import maibot_sdk`` gives a MaiBot plugin.

A plugin folder whose manifest targets MaiBot (``host_application``/``sdk``
ranges, no ``plughost_sdk`` range) is loaded with ``maibot_sdk`` and every
``maibot_sdk.<module>`` mapped onto this package, for that plugin's modules
only; see docs/plugin-authors.md, "Porting a plugin written for MaiBot's SDK".
The real ``maibot_sdk``, if installed, is untouched and never used for it.

Not imported by ``import plughost_sdk``.
"""

from plughost_sdk.maibot.capabilities.send import SendResult
from plughost_sdk.maibot.components import (
    API,
    Action,
    Command,
    EventHandler,
    HomeCard,
    HookHandler,
    LLMProvider,
    MessageGateway,
    ReplyExtension,
    Tool,
    WorkflowStep,
)
from plughost_sdk.maibot.config import Field, PluginConfigBase
from plughost_sdk.maibot.context import PluginContext, PluginPaths
from plughost_sdk.maibot.llm_provider import LLMProviderBase
from plughost_sdk.maibot.plugin import MaiBotPlugin
from plughost_sdk.maibot.types import (
    CONFIG_RELOAD_SCOPE_SELF,
    ON_BOT_CONFIG_RELOAD,
    ON_MODEL_CONFIG_RELOAD,
)

__version__ = "2.16.0"
"""The MaiBot SDK version this layer matches."""

__all__ = [
    "API",
    "CONFIG_RELOAD_SCOPE_SELF",
    "ON_BOT_CONFIG_RELOAD",
    "ON_MODEL_CONFIG_RELOAD",
    "Action",
    "Command",
    "EventHandler",
    "Field",
    "HomeCard",
    "HookHandler",
    "LLMProvider",
    "LLMProviderBase",
    "MaiBotPlugin",
    "MessageGateway",
    "PluginConfigBase",
    "PluginContext",
    "PluginPaths",
    "ReplyExtension",
    "SendResult",
    "Tool",
    "WorkflowStep",
    "__version__",
]
