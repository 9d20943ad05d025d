"""提问助手插件: tools that ask the host's model through ctx.llm."""

from typing import Any

from maibot_sdk import MaiBotPlugin, Tool
from maibot_sdk.types import ToolParameterInfo, ToolParamType


class LLMAskerPlugin(MaiBotPlugin):
    async def on_load(self) -> None:
        pass

    async def on_unload(self) -> None:
        pass

    async def on_config_update(self, scope: str, config_data: dict[str, Any], version: str) -> None:
        pass

    @Tool(
        "ask_model",
        description="向模型提问",
        parameters=[
            ToolParameterInfo(name="question", param_type=ToolParamType.STRING, description="问题"),
            ToolParameterInfo(name="model", param_type=ToolParamType.STRING, description="模型"),
        ],
    )
    async def ask_model(self, question: str, model: str = "", **kwargs: Any) -> dict[str, Any]:
        reply = await self.ctx.llm.generate(question, model=model)
        return {
            "name": "ask_model",
            "content": f"{reply.get('success')}|{reply.get('response')}|{reply.get('error', '')}",
        }

    @Tool(
        "ask_with_tools",
        description="让模型选择工具",
        parameters=[
            ToolParameterInfo(name="question", param_type=ToolParamType.STRING, description="问题"),
        ],
    )
    async def ask_with_tools(self, question: str, **kwargs: Any) -> dict[str, Any]:
        tools = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]
        reply = await self.ctx.llm.generate_with_tools(question, tools)
        calls = [c["function"]["name"] for c in reply.get("tool_calls") or []]
        return {"name": "ask_with_tools", "content": f"{reply.get('response')}|{','.join(calls)}"}

    @Tool(
        "embed_text",
        description="计算文本向量",
        parameters=[
            ToolParameterInfo(name="text", param_type=ToolParamType.STRING, description="文本"),
        ],
    )
    async def embed_text(self, text: str, **kwargs: Any) -> dict[str, Any]:
        reply = await self.ctx.llm.embed(text)
        return {"name": "embed_text", "content": str(reply.get("embedding"))}


def create_plugin() -> LLMAskerPlugin:
    return LLMAskerPlugin()
