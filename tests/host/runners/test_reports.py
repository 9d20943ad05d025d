"""The one place a runner's declarations are bounded, for local and remote runners alike."""

from __future__ import annotations

from typing import Any

import pytest

from plughost.runners.reports import MAX_TOOLS, bound_declarations, declared_names

TOOL = {"name": "calm", "description": "", "parameters_schema": {}}


def entry(**declared: Any) -> dict[str, Any]:
    return {"plugin_id": "tests.bounded", "tools": [TOOL], **declared}


@pytest.mark.parametrize(
    ("declared", "reason"),
    [
        ({"tools": [{**TOOL, "name": f"t{i}"} for i in range(MAX_TOOLS + 1)]}, "513 tools"),
        ({"resources": [{"uri": f"r://{i}", "name": "r"} for i in range(600)]}, "600 resources"),
        ({"prompts": [{"name": f"p{i}"} for i in range(600)]}, "600 prompts"),
        ({"prompts": [{"name": "p", "description": "x" * 20_000}]}, "20,000 characters"),
        (
            {"components": [{"name": "c", "type": "COMMAND", "metadata": {"x": "y" * 300_000}}]},
            "bytes of JSON",
        ),
        ({"components": "not a list"}, "components that are not a list"),
    ],
)
def test_a_declaration_over_a_bound_becomes_a_failure_naming_it(
    declared: dict[str, Any], reason: str
) -> None:
    kept, refused = bound_declarations([entry(**declared), {**entry(), "plugin_id": "tests.ok"}])

    assert [e["plugin_id"] for e in kept] == ["tests.ok"]
    assert len(refused) == 1 and refused[0]["stage"] == "declare"
    assert reason in refused[0]["reason"]


def test_what_a_report_declares_is_named_by_kind() -> None:
    names = declared_names(
        entry(
            components=[{"name": "hello", "type": "COMMAND"}, {"name": "get", "type": "API"}],
            resources=[{"uri": "notes://all", "name": "notes"}],
            prompts=[{"name": "summarize"}],
        )
    )

    assert names == {
        "tool:calm",
        "command:hello",
        "api:get",
        "resource:notes://all",
        "prompt:summarize",
    }
