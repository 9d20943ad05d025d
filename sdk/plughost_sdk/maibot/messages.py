"""``maibot_sdk.messages``: MaiMessages, the message model event handlers receive."""

from __future__ import annotations

from copy import deepcopy
from typing import Any

from pydantic import BaseModel, Field

from plughost_sdk.maibot.types import ModifyFlag

__all__ = ["MaiMessages", "MessageSegment"]


class MessageSegment(BaseModel):
    """One segment of a message: ``text``, ``image``, ``at``, ``reply``..."""

    type: str = "text"
    data: dict[str, Any] = Field(default_factory=dict)


def _all_modifiable() -> dict[str, bool]:
    return {flag.value: True for flag in ModifyFlag}


class MaiMessages(BaseModel):
    """A message as it passes through event handlers, with what each may change."""

    message_segments: list[MessageSegment] = Field(default_factory=list)
    plain_text: str = ""
    llm_prompt: str | None = None
    llm_response_content: str | None = None
    llm_response_reasoning: str | None = None
    llm_response_model: str | None = None
    llm_response_tool_call: list[dict[str, Any]] | None = None
    stream_id: str | None = None
    is_group_message: bool = False
    is_private_message: bool = False
    message_base_info: dict[str, Any] = Field(default_factory=dict)
    raw_message: Any | None = None
    action_usage: list[str] | None = None
    additional_data: dict[str, Any] = Field(default_factory=dict)
    modify_flags: dict[str, bool] = Field(default_factory=_all_modifiable)

    def deepcopy(self) -> MaiMessages:
        """A deep copy."""
        return deepcopy(self)

    def can_modify(self, flag: ModifyFlag) -> bool:
        """Whether ``flag`` allows a change."""
        return self.modify_flags.get(flag, False)

    def set_modify_flag(self, flag: ModifyFlag, value: bool) -> None:
        """Allow or forbid a kind of change."""
        self.modify_flags[flag] = value

    def modify_prompt(self, new_prompt: str) -> bool:
        """Replace the LLM prompt if allowed; True when changed."""
        if not self.can_modify(ModifyFlag.CAN_MODIFY_PROMPT):
            return False
        self.llm_prompt = new_prompt
        return True

    def modify_response(self, new_content: str) -> bool:
        """Replace the LLM response if allowed; True when changed."""
        if not self.can_modify(ModifyFlag.CAN_MODIFY_RESPONSE):
            return False
        self.llm_response_content = new_content
        return True

    def modify_plain_text(self, new_text: str) -> bool:
        """Replace the plain text if allowed; True when changed."""
        if not self.can_modify(ModifyFlag.CAN_MODIFY_MESSAGE):
            return False
        self.plain_text = new_text
        return True

    def to_rpc_dict(self) -> dict[str, Any]:
        """The JSON-ready dict sent over the wire."""
        return self.model_dump(mode="json")

    @classmethod
    def from_rpc_dict(cls, data: dict[str, Any]) -> MaiMessages:
        """Rebuild from :meth:`to_rpc_dict`'s output."""
        return cls.model_validate(data)
