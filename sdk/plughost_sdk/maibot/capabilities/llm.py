"""``ctx.llm``: the host's language models.

Model routing is the host's: ``model`` alone may name a task or a model,
``task_name`` picks a task, ``model_name`` always picks a model.
"""

from __future__ import annotations

import base64
from typing import Any

from plughost_sdk.maibot.capabilities._base import Proxy


def _with_model_alias(result: dict[str, Any]) -> dict[str, Any]:
    if "model" not in result and "model_name" in result:
        result["model"] = result["model_name"]
    return result


def _generation_payload(
    kwargs: dict[str, Any],
    model: str,
    temperature: float | None,
    max_tokens: int | None,
    task_name: str | None,
    model_name: str,
) -> dict[str, Any]:
    payload = dict(kwargs)
    payload["model"] = model
    if task_name:
        payload["task_name"] = task_name
    if model_name:
        payload["model_name"] = model_name
    if temperature is not None:
        payload["temperature"] = temperature
    if max_tokens is not None:
        payload["max_tokens"] = max_tokens
    return payload


class LLMCapability(Proxy):
    """Generate text, call tools through a model, embed, transcribe."""

    async def generate(
        self,
        prompt: str | list[dict[str, Any]],
        model: str = "",
        temperature: float | None = None,
        max_tokens: int | None = None,
        *,
        task_name: str | None = None,
        model_name: str = "",
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Generate a reply to ``prompt`` (text or chat messages)."""
        payload = {"prompt": prompt, **kwargs}
        payload = _generation_payload(
            payload, model, temperature, max_tokens, task_name, model_name
        )
        result = await self._call("llm.generate", **payload)
        if isinstance(result, dict):
            return _with_model_alias(result)
        return {"success": False, "response": "", "reasoning": "", "model": ""}

    async def generate_with_tools(
        self,
        prompt: str | list[dict[str, Any]],
        tools: list[dict[str, Any]],
        model: str = "",
        temperature: float | None = None,
        max_tokens: int | None = None,
        *,
        task_name: str | None = None,
        model_name: str = "",
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Generate with ``tools`` offered to the model."""
        payload = {"prompt": prompt, "tools": tools, **kwargs}
        payload = _generation_payload(
            payload, model, temperature, max_tokens, task_name, model_name
        )
        result = await self._call("llm.generate_with_tools", **payload)
        if isinstance(result, dict):
            return _with_model_alias(result)
        return {"success": False, "response": "", "reasoning": "", "model": "", "tool_calls": []}

    async def embed(
        self,
        text: str | None = None,
        *,
        texts: list[str] | None = None,
        task_name: str = "embedding",
        model: str = "",
        model_name: str = "",
        max_concurrent: int | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Embed ``text`` (or each of ``texts``)."""
        result = await self._call(
            "llm.embed",
            text=text,
            texts=texts,
            task_name=task_name,
            model=model,
            model_name=model_name,
            max_concurrent=max_concurrent,
            **kwargs,
        )
        return result if isinstance(result, dict) else {}

    async def transcribe_audio(
        self,
        audio: bytes | str | None = None,
        *,
        audio_base64: str = "",
        voice_base64: str = "",
        task_name: str = "voice",
        model: str = "",
        model_name: str = "",
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Transcribe audio: bytes, or base64 text (a data URL too)."""
        payload = dict(kwargs)
        if isinstance(audio, bytes):
            payload["audio_base64"] = base64.b64encode(audio).decode("ascii")
        elif isinstance(audio, str) and audio.strip():
            payload["audio_base64"] = audio.strip()
        elif audio_base64:
            payload["audio_base64"] = audio_base64
        elif voice_base64:
            payload["voice_base64"] = voice_base64
        payload.update(task_name=task_name, model=model, model_name=model_name)
        result = await self._call("llm.transcribe_audio", **payload)
        return result if isinstance(result, dict) else {}

    async def get_available_models(self) -> list[str]:
        """The model task names the host offers."""
        result = await self._call("llm.get_available_models")
        if isinstance(result, dict):
            result = result.get("models")
        return result if isinstance(result, list) else []
