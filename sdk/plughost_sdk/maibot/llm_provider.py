"""``maibot_sdk.llm_provider``: LLMProviderBase.

A plugin's ``@LLMProvider`` method usually forwards ``(operation, request)`` to
an instance of a subclass, which routes it by operation.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

__all__ = ["LLMProviderBase"]


class LLMProviderBase(ABC):
    """Base of a model client a plugin offers to MaiBot."""

    async def dispatch(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        """Route ``request`` by ``operation`` (response, embedding, audio_transcription).

        Raises:
            ValueError: an unknown operation.
        """
        if operation == "response":
            return await self.get_response(request)
        if operation == "embedding":
            return await self.get_embedding(request)
        if operation == "audio_transcription":
            return await self.get_audio_transcriptions(request)
        raise ValueError(f"unsupported LLM provider operation: {operation}")

    @abstractmethod
    async def get_response(self, request: dict[str, Any]) -> dict[str, Any]:
        """Answer a generation request."""

    async def get_embedding(self, request: dict[str, Any]) -> dict[str, Any]:
        """Answer an embedding request (not implemented by default)."""
        raise NotImplementedError("this LLM provider does not implement embedding")

    async def get_audio_transcriptions(self, request: dict[str, Any]) -> dict[str, Any]:
        """Answer a transcription request (not implemented by default)."""
        raise NotImplementedError("this LLM provider does not implement audio_transcription")
