"""The public names of plughost_sdk: pinned, so a change to them is a deliberate one."""

from __future__ import annotations

import importlib

import plughost_sdk

PUBLIC_NAMES = [
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


def test_public_names_are_pinned() -> None:
    assert plughost_sdk.__all__ == PUBLIC_NAMES


def test_pinned_list_is_sorted() -> None:
    assert sorted(PUBLIC_NAMES) == PUBLIC_NAMES


def test_every_public_name_is_importable() -> None:
    module = importlib.import_module("plughost_sdk")

    missing = [name for name in PUBLIC_NAMES if not hasattr(module, name)]

    assert missing == []


def test_star_import_gives_exactly_the_public_names() -> None:
    namespace: dict[str, object] = {}
    exec("from plughost_sdk import *", namespace)

    assert sorted(k for k in namespace if k != "__builtins__") == PUBLIC_NAMES


def test_version_is_a_semantic_version_string() -> None:
    parts = plughost_sdk.__version__.split(".")

    assert len(parts) == 3
    assert all(part.isdigit() for part in parts)
