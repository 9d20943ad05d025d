"""@Resource and @Prompt: declarations checked at class definition, return values to wire form."""

from __future__ import annotations

from typing import Any

import pytest

from plughost_sdk import Plugin, Prompt, PromptArgument, Resource
from plughost_sdk.errors import PluginDeclarationError
from plughost_sdk.resources import match_template, prompt_messages, resource_contents


class Notes(Plugin):
    @Resource("notes://today", description="Today's notes", mime_type="text/markdown")
    async def today(self) -> str:
        return "# today"

    @Resource("notes://day/{date}", name="day", completions={"date": ["2026-01-01"]})
    async def day(self, date: str) -> str:
        return date

    @Prompt(
        "summarize",
        arguments=[PromptArgument("topic", "What to summarize"), "style"],
        completions={"style": ["brief", "bullet points"]},
    )
    async def summarize(self, topic: str, style: str) -> str:
        return f"Summarize {topic} ({style})"


def test_resources_and_templates_are_declared_with_their_variables() -> None:
    today, day = Notes.resource_declarations()

    assert (today.uri, today.name, today.mime_type, today.is_template) == (
        "notes://today",
        "today",
        "text/markdown",
        False,
    )
    assert (day.name, day.variables, day.is_template) == ("day", ("date",), True)
    assert day.to_wire()["completions"] == {"date": ["2026-01-01"]}


def test_prompt_arguments_accept_plain_names_as_required_arguments() -> None:
    (prompt,) = Notes.prompt_declarations()

    assert [(a.name, a.description, a.required) for a in prompt.arguments] == [
        ("topic", "What to summarize", True),
        ("style", "", True),
    ]


def test_a_resource_uri_without_a_scheme_fails_at_class_definition() -> None:
    with pytest.raises(PluginDeclarationError, match="starts with a scheme"):

        class Bad(Plugin):
            @Resource("today")
            async def today(self) -> str:
                return ""


def test_completions_for_an_unknown_argument_fail_at_class_definition() -> None:
    with pytest.raises(PluginDeclarationError, match="not one of its arguments"):

        class Bad(Plugin):
            @Prompt("p", arguments=["topic"], completions={"tpoic": ["x"]})
            async def p(self, topic: str) -> str:
                return topic


def test_a_uri_template_matches_one_path_segment_per_variable() -> None:
    assert match_template("notes://day/{date}/v{n}", "notes://day/2026-01-01/v2") == {
        "date": "2026-01-01",
        "n": "2",
    }
    assert match_template("notes://day/{date}", "notes://day/a/b") is None
    assert match_template("notes://today", "notes://today") == {}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("hi", [{"uri": "u://x", "mime_type": "text/plain", "text": "hi"}]),
        (b"\x00", [{"uri": "u://x", "mime_type": "application/octet-stream", "blob": b"\x00"}]),
        (
            {"id": 1, "data": "x"},
            [{"uri": "u://x", "mime_type": "application/json", "text": '{"id": 1, "data": "x"}'}],
        ),
        (
            {"bytes": b"\x01", "mime_type": "image/png"},
            [{"uri": "u://x", "mime_type": "image/png", "blob": b"\x01"}],
        ),
    ],
)
def test_resource_return_values_become_text_blob_or_json_contents(
    value: Any, expected: list[dict[str, Any]]
) -> None:
    assert resource_contents("u://x", None, value) == expected


def test_prompt_return_values_become_user_and_assistant_messages() -> None:
    image = {"type": "image", "bytes": b"\x89PNG", "mime_type": "image/png"}
    messages = prompt_messages(
        ["hello", {"role": "assistant", "content": "hi"}, {"role": "user", "content": image}]
    )

    assert [(m["role"], m["content"]["content_type"]) for m in messages] == [
        ("user", "text"),
        ("assistant", "text"),
        ("user", "image"),
    ]
    with pytest.raises(ValueError, match="role must be"):
        prompt_messages([{"role": "system", "content": "x"}])
