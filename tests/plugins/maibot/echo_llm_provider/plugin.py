"""回声模型插件: an @LLMProvider that answers with the last user message, reversed on request."""

from typing import Any

from maibot_sdk import Command, LLMProvider, LLMProviderBase, MaiBotPlugin


class EchoClient(LLMProviderBase):
    """回声客户端：把最后一条用户消息原样返回。"""

    async def get_response(self, request: dict[str, Any]) -> dict[str, Any]:
        items = request.get("context_items") or []
        users = [item for item in items if item.get("item_type") == "UserMessageItem"]
        text = "".join(part.get("text", "") for part in (users[-1]["parts"] if users else []))
        if text == "boom":
            raise RuntimeError("上游模型不可用")
        if text == "not a dict":
            return "回声"  # type: ignore[return-value]
        tools = request.get("tool_options") or []
        calls = [
            {"id": "call_1", "function": {"name": tool["function"]["name"], "arguments": {}}}
            for tool in tools[:1]
        ]
        model = request.get("model_info", {}).get("name", "")
        return {
            "content": f"回声: {text}",
            "reasoning_content": f"model={model}",
            "tool_calls": calls or None,
            "usage": {"prompt_tokens": len(text), "completion_tokens": len(text) + 4},
        }

    async def get_embedding(self, request: dict[str, Any]) -> dict[str, Any]:
        text = str(request.get("embedding_input", ""))
        return {"embedding": [float(len(text)), 1.0]}


class EchoLLMPlugin(MaiBotPlugin):
    def __init__(self) -> None:
        super().__init__()
        self.client = EchoClient()

    async def on_load(self) -> None:
        pass

    async def on_unload(self) -> None:
        pass

    async def on_config_update(self, scope: str, config_data: dict[str, Any], version: str) -> None:
        pass

    @Command("echo_status", description="查看回声模型状态", pattern=r"^/回声状态$")
    async def echo_status(self, **kwargs: Any) -> tuple[bool, str, bool]:
        return True, "回声模型在线", True

    @LLMProvider("echo", name="Echo", description="回声模型", version="1.1.0")
    async def provide_echo(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        return await self.client.dispatch(operation, request)


def create_plugin() -> EchoLLMPlugin:
    return EchoLLMPlugin()
