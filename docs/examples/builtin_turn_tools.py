"""An embedding runtime's own turn tools (reply, wait, finish) as plughost built-ins.

Runs a scripted turn with no model: it prints the tool definitions a model
would receive, then feeds three tool calls, as a model would send them,
through a ToolRegistry and prints each result.

Run: ``python docs/examples/builtin_turn_tools.py``
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from plughost.tools.batching import run_tool_batch
from plughost.tools.builtin import BuiltinTool, BuiltinToolProvider
from plughost.tools.registry import ToolRegistry
from plughost_sdk import ToolError, ToolExecutionContext, ToolInvocation, ToolSpec


class Turn:
    """The state one reasoning turn keeps: what was sent and how the turn ended."""

    def __init__(self) -> None:
        self.outbox: list[str] = []
        self.wait_seconds: int | None = None
        self.finished = False

    async def reply(self, arguments: dict[str, Any], context: ToolExecutionContext) -> Any:
        text = arguments["reply_text"].strip()
        if not text:
            raise ToolError("reply_text is empty; write the message to send")
        self.outbox.append(text)  # a real runtime sends to context.stream_id here
        return {"content": f"Sent to {context.stream_id}: {text}", "message_id": "m42"}

    async def wait(self, arguments: dict[str, Any], context: ToolExecutionContext) -> Any:
        self.wait_seconds = arguments.get("seconds", 30)  # the handler's own default
        return f"Waiting {self.wait_seconds} s for new messages."

    async def finish(self, arguments: dict[str, Any], context: ToolExecutionContext) -> Any:
        self.finished = True
        return "Turn finished."


def turn_tools(turn: Turn) -> list[BuiltinTool]:
    """Declare the three tools; ``wait`` is offered in both phases."""
    reply_schema = {
        "type": "object",
        "properties": {
            "reply_text": {"type": "string", "description": "The message to send."},
            "set_quote": {"type": "boolean", "description": "Quote the message replied to."},
        },
        "required": ["reply_text"],
    }
    wait_schema = {
        "type": "object",
        "properties": {"seconds": {"type": "integer", "minimum": 1, "maximum": 600}},
    }
    return [
        BuiltinTool(
            spec=ToolSpec(
                name="reply",
                description="Send a reply to the chat.",
                parameters_schema=reply_schema,
            ),
            handler=turn.reply,
        ),
        BuiltinTool(
            spec=ToolSpec(
                name="wait",
                description="Pause, then decide again.",
                parameters_schema=wait_schema,
            ),
            handler=turn.wait,
            phase="both",
        ),
        BuiltinTool(
            spec=ToolSpec(name="finish", description="End the current thinking round."),
            handler=turn.finish,
        ),
    ]


async def main() -> None:
    turn = Turn()
    provider = BuiltinToolProvider(turn_tools(turn), provider_name="turn")
    registry = ToolRegistry()
    registry.register_provider(provider)
    print("timing-phase tools:", [tool.name for tool in provider.tools("timing")])

    definitions = await registry.get_llm_definitions(format="openai")
    print("definitions for the model:")
    print(json.dumps(definitions, indent=2))

    # What a model might send: note the string "45" where an integer is expected.
    calls = [
        ToolInvocation(tool_name="reply", arguments={"reply_text": "Hello!"}, call_id="c1"),
        ToolInvocation(tool_name="wait", arguments={"seconds": "45"}, call_id="c2"),
        ToolInvocation(tool_name="finsh", call_id="c3"),
        ToolInvocation(tool_name="finish", call_id="c4"),
    ]
    context = ToolExecutionContext(session_id="s1", stream_id="stream-7")
    results = await run_tool_batch(registry, calls, context)
    for call, result in zip(calls, results, strict=True):
        status = "ok" if result.success else f"failed ({result.error_code})"
        print(f"{call.call_id} {call.tool_name}: {status}\n  {result.get_history_content()}")

    print(f"outbox={turn.outbox} wait_seconds={turn.wait_seconds} finished={turn.finished}")
    await registry.close()


if __name__ == "__main__":
    asyncio.run(main())
