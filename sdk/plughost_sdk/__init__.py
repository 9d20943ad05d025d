"""plughost SDK: what a plugin author imports.

Write a :class:`Plugin` subclass, mark methods with :func:`Tool` (content to
read with :func:`Resource`, message templates with :func:`Prompt`), and return
anything from them: a dict, a string, a ``(bool, str)`` tuple, or media in
``content_items``. Chat commands, event handlers, named hooks and APIs for
other plugins are declared with :func:`Command`, :func:`EventHandler`,
:func:`HookHandler` and :func:`API`. See docs/plugin-authors.md.
"""

from plughost_sdk._components import (
    API,
    Command,
    EventHandler,
    HomeCard,
    HookHandler,
    LLMProvider,
    MessageGateway,
    ReplyExtension,
    WorkflowStep,
)
from plughost_sdk._decorators import Action, Tool
from plughost_sdk.components import ComponentDeclaration
from plughost_sdk.context import PluginConfig, PluginContext, PluginPaths
from plughost_sdk.declarations import ToolDeclaration
from plughost_sdk.errors import (
    CapabilityError,
    ManifestError,
    PlugHostError,
    PluginDeclarationError,
    PluginError,
    PluginLoadError,
    ProtocolError,
    RunnerCrashedError,
    RunnerError,
    RunnerStartError,
    RunnerTimeoutError,
    ToolError,
)
from plughost_sdk.models import (
    ContentItem,
    ToolAnnotation,
    ToolAvailabilityContext,
    ToolExecutionContext,
    ToolExecutionResult,
    ToolIcon,
    ToolInvocation,
    ToolSpec,
)
from plughost_sdk.plugin import Plugin
from plughost_sdk.resources import Prompt, PromptArgument, Resource
from plughost_sdk.types import (
    ErrorPolicy,
    EventType,
    HookMode,
    HookOrder,
    ToolParameterInfo,
    ToolParamType,
)

__version__ = "0.1.0"

__all__ = [
    "API",
    "Action",
    "CapabilityError",
    "Command",
    "ComponentDeclaration",
    "ContentItem",
    "ErrorPolicy",
    "EventHandler",
    "EventType",
    "HomeCard",
    "HookHandler",
    "HookMode",
    "HookOrder",
    "LLMProvider",
    "ManifestError",
    "MessageGateway",
    "PlugHostError",
    "Plugin",
    "PluginConfig",
    "PluginContext",
    "PluginDeclarationError",
    "PluginError",
    "PluginLoadError",
    "PluginPaths",
    "Prompt",
    "PromptArgument",
    "ProtocolError",
    "ReplyExtension",
    "Resource",
    "RunnerCrashedError",
    "RunnerError",
    "RunnerStartError",
    "RunnerTimeoutError",
    "Tool",
    "ToolAnnotation",
    "ToolAvailabilityContext",
    "ToolDeclaration",
    "ToolError",
    "ToolExecutionContext",
    "ToolExecutionResult",
    "ToolIcon",
    "ToolInvocation",
    "ToolParamType",
    "ToolParameterInfo",
    "ToolSpec",
    "WorkflowStep",
    "__version__",
]
