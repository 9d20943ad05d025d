"""One complete model turn through an embedded PluginHost, with a scripted "model".

definitions -> the model's tool calls -> invoke -> history messages, including
an image that the history split moves out of the tool result into its own
message. Uses the plugins in plugins_example/ and needs no LLM.

Run: ``python docs/examples/embedding_turn.py``
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from plughost import CapabilityCall, LifecycleEvent, PluginHost

EXAMPLES = Path(__file__).resolve().parents[2] / "plugins_example"

# What a model answered to the definitions below, in OpenAI's tool_calls shape.
SCRIPTED_TOOL_CALLS = [
    {"id": "call_1", "function": {"name": "get_weather", "arguments": '{"city": "Tokyo"}'}},
    {
        "id": "call_2",
        "function": {
            "name": "render_swatch",
            "arguments": '{"color": "#3366ff", "width": 8, "height": 8}',
        },
    },
    {"id": "call_3", "function": {"name": "notify", "arguments": '{"text": "Report ready"}'}},
]


async def send_text(call: CapabilityCall) -> dict[str, Any]:
    """The bot runtime's side of ctx.send.text: deliver a plugin's message."""
    print(f"  [chat {call.args['stream_id']}] {call.plugin_id}: {call.args['text']}")
    return {"sent": True, "message_id": "m-1"}


def shorten(message: dict[str, Any]) -> dict[str, Any]:
    """Hide base64 payloads so the printout stays readable."""
    text = json.dumps(message)
    if "base64," in text:
        head, _, rest = text.partition("base64,")
        text = head + "base64,<...>" + rest[rest.index('"') :]
    return dict(json.loads(text))


async def main() -> None:
    async with PluginHost([EXAMPLES]) as host:
        host.register_capability("send.text", send_text)

        def show(event: LifecycleEvent) -> None:
            print(f"  event: {event.kind.value}: {event.message}")

        host.events.add_callback(show)  # runner crashes, reloads... as they happen

        # One conversation: its ids are given here, once, and every step below uses them.
        chat = host.session("s1", stream_id="group-42", is_group_chat=True)

        # 1. What the model is offered this turn (stable order: prompt caches keep hitting).
        definitions = await chat.tools()
        print("definitions:", [d["function"]["name"] for d in definitions])

        # 2. The model's message becomes invocations; JSON-string arguments are fine.
        calls = chat.openai_calls({"role": "assistant", "tool_calls": SCRIPTED_TOOL_CALLS})

        # 3. Run the batch: read-only calls run together, the rest in order.
        results = await chat.run(calls)
        for invocation, result in zip(calls.invocations, results, strict=True):
            status = "ok" if result.success else f"failed ({result.error_code})"
            print(f"{invocation.tool_name}: {status}")

        # 4. History: tool messages first, then the image as its own user message.
        for message in chat.openai_turn(calls, results):
            print(json.dumps(shorten(message), ensure_ascii=False))


if __name__ == "__main__":
    asyncio.run(main())
