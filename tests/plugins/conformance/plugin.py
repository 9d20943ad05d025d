"""The tools, resources and prompts the official MCP conformance suite expects of a server.

Also ``touch_watched_resource``, which announces a change of ``test://watched-resource``
to subscribers (the suite only subscribes; tests/integration/test_mcp_server_features.py
checks the notification).

``plughost serve --plugins tests/plugins/conformance --mcp-http ...`` serves them;
tests/integration/test_mcp_conformance.py runs the suite against it. Names, URIs
and texts are the suite's own (@modelcontextprotocol/conformance, server scenarios).
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

from plughost_sdk import Plugin, Prompt, PromptArgument, Resource, Tool, ToolError
from plughost_sdk.types import ToolParameterInfo

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
)
# A 44-byte WAV header with no samples: the smallest valid audio file.
WAV = (
    b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00"
    b"D\xac\x00\x00\x88X\x01\x00\x02\x00\x10\x00data\x00\x00\x00\x00"
)
JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}
TEXT = ToolParameterInfo


class ConformancePlugin(Plugin):
    # --- tools ------------------------------------------------------------------------------

    @Tool("test_simple_text", brief_description="Return a simple text")
    async def simple_text(self, **kwargs: Any) -> str:
        return "This is a simple text response for testing."

    @Tool("test_image_content", brief_description="Return an image")
    async def image_content(self, **kwargs: Any) -> dict[str, Any]:
        return {"content_items": [{"type": "image", "bytes": PNG, "mime_type": "image/png"}]}

    @Tool("test_audio_content", brief_description="Return an audio clip")
    async def audio_content(self, **kwargs: Any) -> dict[str, Any]:
        return {"content_items": [{"type": "audio", "bytes": WAV, "mime_type": "audio/wav"}]}

    @Tool("test_embedded_resource", brief_description="Return an embedded resource")
    async def embedded_resource(self, **kwargs: Any) -> dict[str, Any]:
        item = {
            "type": "resource",
            "uri": "test://embedded-resource",
            "mime_type": "text/plain",
            "text": "This is an embedded resource content.",
        }
        return {"content_items": [item]}

    @Tool("test_multiple_content_types", brief_description="Return text, image and resource")
    async def multiple_content_types(self, **kwargs: Any) -> dict[str, Any]:
        resource = {
            "type": "resource",
            "uri": "test://mixed-content-resource",
            "mime_type": "application/json",
            "text": json.dumps({"test": "data", "value": 123}),
        }
        image = {"type": "image", "bytes": PNG, "mime_type": "image/png"}
        return {"content": "Multiple content types test:", "content_items": [image, resource]}

    @Tool("test_tool_with_logging", brief_description="Log three records while running")
    async def tool_with_logging(self, **kwargs: Any) -> str:
        self.ctx.logger.info("Tool execution started")
        await asyncio.sleep(0.05)
        self.ctx.logger.info("Tool processing data")
        await asyncio.sleep(0.05)
        self.ctx.logger.info("Tool execution completed")
        return "Logging tool completed"

    @Tool("test_tool_with_progress", brief_description="Report progress 0, 50 and 100 of 100")
    async def tool_with_progress(self, **kwargs: Any) -> str:
        for done in (0, 50, 100):
            self.ctx.report_progress(done, 100)
            if done < 100:
                await asyncio.sleep(0.05)
        return "Progress tool completed"

    @Tool("test_error_handling", brief_description="Always fail")
    async def error_handling(self, **kwargs: Any) -> str:
        raise ToolError("This tool intentionally returns an error for testing")

    @Tool("test_reconnection", brief_description="Answer (the server may resume its stream)")
    async def reconnection(self, **kwargs: Any) -> str:
        return "Reconnection test completed"

    @Tool(
        "test_sampling",
        brief_description="Ask the client's model",
        parameters=[TEXT(name="prompt", description="The prompt to send to the LLM")],
    )
    async def sampling(self, prompt: str, **kwargs: Any) -> str:
        answer = await self.ctx.llm.generate(prompt, max_tokens=100)
        return f"LLM response: {answer['text']}"

    @Tool(
        "test_elicitation",
        brief_description="Ask the client's user",
        parameters=[TEXT(name="message", description="The message to show the user")],
    )
    async def elicitation(self, message: str, **kwargs: Any) -> str:
        schema = {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        }
        reply = await self.ctx.elicit(message, schema)
        return f"User response: action={reply['action']}, content={json.dumps(reply['content'])}"

    @Tool("test_elicitation_sep1034_defaults", brief_description="Elicit with defaults")
    async def elicitation_defaults(self, **kwargs: Any) -> str:
        status = {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"}
        schema = {
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": status,
                "verified": {"type": "boolean", "default": True},
            },
        }
        reply = await self.ctx.elicit("Please review your profile", schema)
        return _elicited(reply)

    @Tool("test_elicitation_sep1330_enums", brief_description="Elicit with every enum form")
    async def elicitation_enums(self, **kwargs: Any) -> str:
        titled = [{"const": f"value{i}", "title": t} for i, t in enumerate(("First", "Second"), 1)]
        schema = {
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "oneOf": titled},
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {"type": "array", "items": {"anyOf": titled}},
            },
        }
        reply = await self.ctx.elicit("Pick your options", schema)
        return _elicited(reply)

    @Tool(
        "json_schema_2020_12_tool",
        brief_description="Tool with JSON Schema 2020-12 features",
        parameters=JSON_SCHEMA_2020_12,
    )
    async def json_schema_tool(self, **kwargs: Any) -> str:
        return json.dumps(kwargs.get("name"))

    @Tool("touch_watched_resource", brief_description="Announce that the watched resource changed")
    async def touch_watched_resource(self, **kwargs: Any) -> str:
        await self.ctx.resource_updated("test://watched-resource")
        return "touched"

    # --- resources ----------------------------------------------------------------------------

    @Resource("test://static-text", name="static_text", mime_type="text/plain")
    async def static_text(self) -> str:
        return "This is the content of the static text resource."

    @Resource("test://static-binary", name="static_binary", mime_type="image/png")
    async def static_binary(self) -> bytes:
        return PNG

    @Resource(
        "test://template/{id}/data",
        name="template_data",
        mime_type="application/json",
        completions={"id": ["123", "456"]},
    )
    async def template_data(self, id: str) -> dict[str, Any]:
        return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}

    @Resource("test://watched-resource", name="watched_resource", mime_type="text/plain")
    async def watched(self) -> str:
        return "A resource to subscribe to."

    # --- prompts ----------------------------------------------------------------------------

    @Prompt("test_simple_prompt", description="A simple prompt without arguments")
    async def simple_prompt(self) -> str:
        return "This is a simple prompt for testing."

    @Prompt(
        "test_prompt_with_arguments",
        description="A prompt with two arguments",
        arguments=[
            PromptArgument("arg1", "First test argument"),
            PromptArgument("arg2", "Second test argument"),
        ],
        completions={"arg1": ["paris", "park", "party"]},
    )
    async def prompt_with_arguments(self, arg1: str, arg2: str) -> str:
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @Prompt(
        "test_prompt_with_embedded_resource",
        description="A prompt embedding a resource",
        arguments=[PromptArgument("resourceUri", "URI of the resource to embed")],
    )
    async def prompt_with_embedded_resource(self, resourceUri: str) -> list[Any]:  # noqa: N803
        resource = {
            "type": "resource",
            "uri": resourceUri,
            "mime_type": "text/plain",
            "text": "Embedded resource content for testing.",
        }
        text = "Please process the embedded resource above."
        return [{"role": "user", "content": resource}, text]

    @Prompt("test_prompt_with_image", description="A prompt with an image")
    async def prompt_with_image(self) -> list[Any]:
        image = {"type": "image", "bytes": PNG, "mime_type": "image/png"}
        return [{"role": "user", "content": image}, "Please analyze the image above."]


def _elicited(reply: dict[str, Any]) -> str:
    content = json.dumps(reply.get("content"))
    return f"Elicitation completed: action={reply['action']}, content={content}"


def create_plugin() -> ConformancePlugin:
    return ConformancePlugin()
