"""Send a notice to the current chat through ``ctx.send.text``.

Shows the parts of a plugin that talk to the host: a capability call (listed
in the manifest's ``capabilities``, or the host refuses it), settings read from
``config.toml`` and validated by ``config_model``, and ``on_config_update``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from plughost_sdk import Plugin, Tool, ToolError
from plughost_sdk.types import ToolParameterInfo, ToolParamType

ELLIPSIS = "…"


class NotifySettings(BaseModel):
    """The ``[notify]`` section of config.toml."""

    model_config = ConfigDict(extra="forbid")

    prefix: str = "[bot] "
    max_length: int = Field(default=200, ge=len(ELLIPSIS) + 1, le=4000)


class NotifierConfig(BaseModel):
    """The whole config.toml; an invalid edit is rejected and the old values stay."""

    notify: NotifySettings = Field(default_factory=NotifySettings)


class NotifierPlugin(Plugin):
    """Posts short notices to the chat the tool was called from."""

    config_model = NotifierConfig

    @Tool(
        "notify",
        brief_description="Post a short notice to the current chat",
        detailed_description=(
            "Sends the text as a message to the chat this conversation happens in, with "
            "the configured prefix. Long text is shortened."
        ),
        parameters=[
            ToolParameterInfo(
                name="text",
                param_type=ToolParamType.STRING,
                description="The notice to post",
            ),
        ],
        timeout_ms=5000,
    )
    async def notify(self, text: str, **kwargs: Any) -> dict[str, Any]:
        """Send ``text`` to the stream the call came from."""
        stream_id = kwargs.get("stream_id")
        if not stream_id:
            raise ToolError("notify can only be used inside a chat: there is no current stream")
        if not text.strip():
            raise ToolError("text is empty; give the notice to post")
        message = self._format(text)
        await self.ctx.send.text(message, stream_id)
        return {"success": True, "message": f"Posted the notice ({len(message)} characters)."}

    async def on_config_update(self, scope: str, config_data: dict[str, Any], version: str) -> None:
        """Log which settings changed; ``self.config`` already holds the new values."""
        notify = config_data.get("notify", {})
        self.ctx.logger.info(
            "config updated scope=%s version=%s prefix=%r max_length=%s",
            scope,
            version,
            notify.get("prefix"),
            notify.get("max_length"),
        )

    def _format(self, text: str) -> str:
        settings = NotifySettings.model_validate(self.config.get("notify", {}))
        message = settings.prefix + text.strip()
        if len(message) > settings.max_length:
            message = message[: settings.max_length - len(ELLIPSIS)] + ELLIPSIS
        return message


def create_plugin() -> NotifierPlugin:
    return NotifierPlugin()
