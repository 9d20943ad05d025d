"""A plugin written in the old ``@Action`` style, to show it still loads and runs.

``@Action`` is deprecated: importing this module emits a DeprecationWarning,
and the action becomes a tool named ``greet`` with one optional string
parameter. Like an old action, the handler reads its input from
``action_data``, receives the model's ``reasoning``, and answers with a
``(success, message)`` tuple. New plugins should use ``@Tool`` instead.
"""

from __future__ import annotations

from typing import Any

from plughost_sdk import Action, Plugin


class GreeterPlugin(Plugin):
    """Greets whoever the model names."""

    @Action(
        "greet",
        "Greet someone by name",
        activation_type="keyword",
        activation_keywords=["hello", "hi"],
        action_parameters={"target": "who to greet"},
        action_require=["someone says hello or hi to the bot"],
    )
    async def greet(
        self,
        action_data: dict[str, Any] | None = None,
        reasoning: str = "",
        **kwargs: Any,
    ) -> tuple[bool, str]:
        """Greet ``action_data["target"]``."""
        # Old actions got their parameters in action_data; fall back to plain keyword
        # arguments so the handler works whichever way the caller passes them.
        data = action_data if action_data is not None else kwargs
        target = str(data.get("target") or "").strip()
        if reasoning:
            self.ctx.logger.debug("greet chosen because: %s", reasoning)
        if not target:
            return False, "Nobody to greet: pass the person's name as 'target'."
        return True, f"Hello, {target}! Nice to see you."


def create_plugin() -> GreeterPlugin:
    return GreeterPlugin()
