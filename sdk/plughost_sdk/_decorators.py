"""``@Tool`` and ``@Action``: they only mark a method; discovery happens at collection.

Marking keeps decoration cheap and side-effect free. The declaration is built
and validated when the plugin class is defined (see
:mod:`plughost_sdk.declarations`), where the error can name the plugin class.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from plughost_sdk.types import ToolParameterInfo

__all__ = ["Action", "Tool", "ToolMark"]

MARK_ATTRIBUTE = "__plughost_tool__"
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class ToolMark:
    """What a decorator recorded on a method, before validation."""

    name: str
    brief_description: str
    detailed_description: str
    parameters: list[ToolParameterInfo] | Mapping[str, Any] | None
    core_tool: bool
    metadata: dict[str, Any] = field(default_factory=dict)
    legacy_action: bool = False


def Tool(  # noqa: N802 - a decorator named like the component it declares
    name: str,
    description: str = "",
    brief_description: str = "",
    detailed_description: str = "",
    parameters: list[ToolParameterInfo] | Mapping[str, Any] | None = None,
    core_tool: bool = False,
    **metadata: Any,
) -> Callable[[F], F]:
    """Declare a plugin method as a tool the model can call.

    Args:
        name: The tool name the model calls; unique within the plugin.
        description: Same as ``brief_description`` (kept for compatibility).
        brief_description: One or two sentences that help the model decide to call it.
        detailed_description: Usage notes; parameter documentation is appended.
        parameters: A list of :class:`ToolParameterInfo`, or a dict of name to
            JSON Schema fragment (legacy form).
        core_tool: Show the tool to the model directly instead of through tool search.
        **metadata: Kept on the tool. Known keys: ``visibility`` (``"visible"``,
            ``"deferred"``, ``"hidden"``), ``timeout_ms``, ``read_only``,
            ``exclusive``, ``chat_scope`` (``"all"``, ``"group"``, ``"private"``).

    Returns:
        A decorator that marks the method and returns it unchanged.
    """
    mark = ToolMark(
        name=name,
        brief_description=brief_description or description,
        detailed_description=detailed_description,
        parameters=parameters,
        core_tool=core_tool,
        metadata=dict(metadata),
    )
    return _marker(mark)


def Action(  # noqa: N802
    name: str,
    description: str = "",
    *,
    activation_type: str = "always",
    activation_keywords: Iterable[str] = (),
    action_parameters: Mapping[str, str] | None = None,
    action_require: Iterable[str] = (),
    associated_types: Iterable[str] = (),
    action_prompt: str = "",
    parallel_action: bool = False,
    **metadata: Any,
) -> Callable[[F], F]:
    """Declare a legacy action; deprecated, it becomes a tool.

    Every action parameter becomes an optional string parameter; the activation
    settings are kept as metadata. The handler receives the parameters as
    keyword arguments and, as before, ``action_data`` (all of them as a dict)
    and ``reasoning``. Write new plugins with :func:`Tool`.
    """
    warnings.warn(
        f"@Action({name!r}) is deprecated; declare it with @Tool instead "
        "(see docs/plugin-authors.md, 'Porting from @Action')",
        DeprecationWarning,
        stacklevel=2,
    )
    params = [
        ToolParameterInfo(name=key, description=str(text), required=False)
        for key, text in (action_parameters or {}).items()
    ]
    requirements = [str(r) for r in action_require]
    keywords = [str(k) for k in activation_keywords]
    detailed = "\n".join(
        line
        for line in (
            action_prompt.strip(),
            ("Use when: " + "; ".join(requirements)) if requirements else "",
            ("Keywords: " + ", ".join(keywords)) if keywords else "",
        )
        if line
    )
    legacy = {
        "legacy_action": True,
        "legacy_component_type": "ACTION",
        "activation_type": activation_type,
        "activation_keywords": keywords,
        "action_require": requirements,
        "associated_types": [str(t) for t in associated_types],
        "parallel_action": parallel_action,
    }
    mark = ToolMark(
        name=name,
        brief_description=description,
        detailed_description=detailed,
        parameters=params,
        core_tool=False,
        metadata={**legacy, **metadata},
        legacy_action=True,
    )
    return _marker(mark)


def _marker(mark: ToolMark) -> Callable[[F], F]:
    def decorate(func: F) -> F:
        setattr(func, MARK_ATTRIBUTE, mark)
        return func

    return decorate
