"""Asks the MCP client's model and user (once, twice, both at once) and notes its cancellation."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from plughost_sdk import Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType

_TEXT = [ToolParameterInfo(name="text", param_type=ToolParamType.STRING)]
_NAME = {
    "type": "object",
    "properties": {"username": {"type": "string"}, "email": {"type": "string"}},
    "required": ["username"],
}


class AskerPlugin(Plugin):
    @Tool("ask_model", brief_description="Ask the client's model once", parameters=_TEXT)
    async def ask_model(self, text: str, **kwargs: Any) -> str:
        answer = await self.ctx.llm.generate(text, max_tokens=50)
        return f"model said {answer['text']}"

    @Tool("ask_user", brief_description="Ask the client's user once", parameters=_TEXT)
    async def ask_user(self, text: str, **kwargs: Any) -> str:
        reply = await self.ctx.elicit(text, _NAME)
        return f"user {reply['action']}: {reply['content']['username']}"

    @Tool("ask_twice", brief_description="Ask the model, then the user with its answer")
    async def ask_twice(self, **kwargs: Any) -> str:
        answer = await self.ctx.llm.generate("suggest a name", max_tokens=50)
        reply = await self.ctx.elicit(f"is {answer['text']} fine?", _NAME)
        return f"model {answer['text']}, user {reply['content']['username']}"

    @Tool("ask_both", brief_description="Ask the model and the user at the same time")
    async def ask_both(self, **kwargs: Any) -> str:
        answer, reply = await asyncio.gather(
            self.ctx.llm.generate("suggest a name", max_tokens=50),
            self.ctx.elicit("your name?", _NAME),
        )
        return f"model {answer['text']}, user {reply['content']['username']}"

    @Tool("ask_and_note", brief_description="Ask the user, noting in data/asked.txt")
    async def ask_and_note(self, **kwargs: Any) -> str:
        with _noting(self.ctx.paths.data("asked.txt")):
            reply = await self.ctx.elicit("your name?", _NAME)
        return f"user {reply['content']['username']}"

    @Tool("linger_then_ask", brief_description="Wait until cancelled, noting in data/linger.txt")
    async def linger_then_ask(self, **kwargs: Any) -> str:
        with _noting(self.ctx.paths.data("linger.txt")):
            await asyncio.Event().wait()
        return "never"


@contextlib.contextmanager
def _noting(path: Path) -> Iterator[None]:
    """Write "started" to ``path``, and "cancelled" if the call is cancelled inside."""
    path.write_text("started\n", encoding="utf-8")
    try:
        yield
    except asyncio.CancelledError:
        with path.open("a", encoding="utf-8") as note:
            note.write("cancelled\n")
        raise


def create_plugin() -> AskerPlugin:
    return AskerPlugin()
