"""Route chat messages through an embedded PluginHost: events, commands, the planner hook, a tool.

Each message goes the way a bot runtime sends it:

1. ``on_message_pre_process`` event handlers may drop it or rewrite it;
2. commands: a matching one answers and may end the message's processing;
3. the ``maisaka.planner.before_request`` hook may rewrite what the planner sees;
4. the planner (a scripted "model" here) calls a tool, which runs in its plugin.

Uses ``plugins_example/chat_guard`` (the event handler, the command and the
hook) and ``plugins_example/search_tools`` (the ``get_weather`` tool); needs no LLM.

Run: ``python docs/examples/message_pipeline.py``
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from plughost.dispatch.hook_catalog import PLANNER_HOOK_SPECS
from plughost.host import PluginHost
from plughost_sdk import EventType, ToolExecutionContext

EXAMPLES = Path(__file__).resolve().parents[2] / "plugins_example"
MESSAGES = [
    ("group-42", "  what's the   weather in Tokyo?  "),
    ("group-42", "/weather Oslo"),
    ("group-42", "cheap casino chips, click here"),
]


def scripted_planner(items: list[Any]) -> dict[str, Any]:
    """What a model would answer to the planner request: one tool call."""
    question = str(items[0]["content"])
    city = question.rstrip("?").split()[-1]
    return {"name": "get_weather", "arguments": {"city": city}}


async def handle(host: PluginHost, stream_id: str, text: str) -> None:
    """One message through the pipeline; prints what each step did."""
    print(f"message {text!r}")
    message = {"processed_plain_text": text, "session_id": stream_id}

    # 1. Pre-process events: intercepting handlers in weight order, within 5 s in all.
    pre = await host.emit_event(EventType.ON_MESSAGE_PRE_PROCESS, message, timeout=5)
    if not pre.continue_processing:
        print(f"  dropped by {pre.stopped_by}")
        return
    message = pre.message or message
    text = message["processed_plain_text"]
    print(f"  after pre-processing: {text!r}")

    # 2. Commands: the first enabled command whose pattern or alias matches runs.
    command = await host.dispatch_command(text, message=message, stream_id=stream_id, timeout=5)
    if command.handled:
        print(f"  command {command.command} answered: {command.response!r}")
        if not command.continue_processing:
            return

    # 3. The planner hook: blocking handlers may rewrite the request (or abort it).
    definitions = await host.tools.get_llm_definitions(format="openai")
    request = await host.run_hook(
        "maisaka.planner.before_request",
        timeout=6,
        items=[{"role": "user", "content": text}],
        tool_definitions=definitions,
        session_id=stream_id,
    )
    if request.aborted:
        print(f"  planner request aborted by {request.stopped_by}")
        return
    print(f"  planner sees {json.dumps(request.kwargs['items'], ensure_ascii=False)}")

    # 4. The planner's tool call runs in the tool's plugin, like any model call.
    call = scripted_planner(request.kwargs["items"])
    context = ToolExecutionContext(session_id=stream_id, stream_id=stream_id, is_group_chat=True)
    result = await host.invoke(call["name"], call["arguments"], context)
    answer = result.structured_content if result.success else result.error_message
    print(f"  tool {call['name']}: {json.dumps(answer, ensure_ascii=False)}")


async def main() -> None:
    async with PluginHost([EXAMPLES / "chat_guard", EXAMPLES / "search_tools"]) as host:
        # The planner hooks' rules, as MaiBot declares them: rewrite yes, abort no, 6 s each.
        for spec in PLANNER_HOOK_SPECS:
            host.register_hook_spec(spec)
        for stream_id, text in MESSAGES:
            await handle(host, stream_id, text)


if __name__ == "__main__":
    asyncio.run(main())
