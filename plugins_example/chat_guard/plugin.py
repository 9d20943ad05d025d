"""A bot plugin made of components, not tools: an event handler, a command and a hook.

- ``spam_filter`` sees every message before the bot does
  (``on_message_pre_process``, intercepting): it drops messages with a blocked
  word and tidies the whitespace of the others.
- ``/weather CITY`` is a command: it answers at once and stops the message from
  reaching the model.
- ``planner_brevity`` runs in the ``maisaka.planner.before_request`` hook and
  adds a reminder to what the planner model is about to see.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from plughost_sdk import Command, EventHandler, EventType, HookHandler, HookOrder, Plugin

FORECASTS = {"tokyo": "sunny, 24 °C", "paris": "cloudy, 17 °C", "oslo": "snow, -3 °C"}


class GuardConfig(BaseModel):
    """config.toml (optional): the words that get a message dropped."""

    blocked_words: list[str] = Field(default_factory=lambda: ["spam", "casino"])


class ChatGuard(Plugin):
    """Filters messages, answers /weather, and keeps the planner brief."""

    config_model = GuardConfig

    @EventHandler(
        "spam_filter",
        description="Drop messages with a blocked word; tidy the whitespace of the rest",
        event_type=EventType.ON_MESSAGE_PRE_PROCESS,
        intercept_message=True,
        weight=100,
    )
    async def spam_filter(self, message: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        text = str(message.get("processed_plain_text", ""))
        blocked = self.config.get("blocked_words", ["spam", "casino"])
        if any(word in text.lower() for word in blocked):
            return {"continue_processing": False, "custom_result": "blocked word"}
        tidy = re.sub(r"\s+", " ", text).strip()
        return {"modified_message": {**message, "processed_plain_text": tidy}}

    @Command(
        "weather", description="Today's weather for a city", pattern=r"^/weather\s+(?P<city>\w+)"
    )
    async def weather(
        self, matched_groups: dict[str, str], **kwargs: Any
    ) -> tuple[bool, str, bool]:
        city = matched_groups["city"]
        forecast = FORECASTS.get(city.lower())
        if forecast is None:
            return False, f"No forecast for {city}; try {', '.join(sorted(FORECASTS))}", True
        return True, f"{city}: {forecast}", True

    @HookHandler(
        "maisaka.planner.before_request",
        name="planner_brevity",
        description="Remind the planner to keep answers short",
        order=HookOrder.LATE,
        timeout_ms=2000,
    )
    async def planner_brevity(self, items: list[Any], **kwargs: Any) -> dict[str, Any]:
        reminder = {"role": "system", "content": "Answer in one or two sentences."}
        return {"modified_kwargs": {**kwargs, "items": [*items, reminder]}}


def create_plugin() -> ChatGuard:
    return ChatGuard()
