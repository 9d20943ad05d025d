"""Test doubles for the SDK's seams."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from plughost_sdk import CapabilityError


@dataclass
class FakeBridge:
    """A CapabilityBridge that records calls and answers from a table.

    An answer that is a :class:`CapabilityError` is raised instead of returned;
    a capability without an answer returns True, as ``send.*`` does.
    """

    answers: dict[str, Any] = field(default_factory=dict)
    calls: list[tuple[str, str, dict[str, Any], int | None]] = field(default_factory=list)
    progress: list[tuple[float, float | None, str | None]] = field(default_factory=list)

    async def call_capability(
        self, plugin_id: str, capability: str, args: dict[str, Any], timeout_ms: int | None
    ) -> Any:
        self.calls.append((plugin_id, capability, args, timeout_ms))
        answer = self.answers.get(capability, True)
        if isinstance(answer, CapabilityError):
            raise answer
        return answer

    def report_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, total, message))

    def is_cancelled(self) -> bool:
        return False
