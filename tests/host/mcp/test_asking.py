"""What the user is shown when a plugin or server asks: who asks first, nothing hidden, bounded."""

from __future__ import annotations

from typing import Any

import pytest

from plughost.mcp.asking import MAX_FORM_BYTES, FormRefused, asked, checked_form


def test_the_asker_and_the_tool_come_before_the_text_which_is_one_clean_line() -> None:
    message = asked("MCP server demo", "mcp_demo_ask", "line one\n\u2067second\u2069 line\u200b")

    assert message == "MCP server demo asks (tool mcp_demo_ask): line one second line"


def test_a_long_message_is_cut() -> None:
    message = asked("plugin community.x", "", "a" * 10_000)

    assert message.startswith("plugin community.x asks: aaa")
    assert len(message) == len("plugin community.x asks: ") + 2000
    assert message.endswith("…")


def _nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"type": "object", "description": "x" * MAX_FORM_BYTES}, "over"),
        (_nested(10), "nested deeper"),
        ({"type": "object", "properties": {"key\u200b": {"type": "string"}}}, "hidden characters"),
    ],
)
def test_a_form_too_large_too_deep_or_with_a_hiding_field_name_is_refused(
    schema: dict[str, Any], reason: str
) -> None:
    with pytest.raises(FormRefused, match=reason):
        checked_form(schema)
