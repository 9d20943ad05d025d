"""A MaiBot tool's return value reads as MaiBot's host reads it (success, text, error).

The expected triples transcribe MaiBot 1.3's ``ComponentQueryService._parse_tool_invoke_result``
(``src/plugin_runtime/component_query.py``) for each shape of return value.
"""

from __future__ import annotations

from typing import Any

import pytest

from plughost_runner.maibot.loader import tool_result
from plughost_sdk.results import normalize_result

CASES: list[tuple[Any, tuple[bool, str, str]]] = [
    ({"content": " 晴 "}, (True, "晴", "")),
    ({"message": "done"}, (True, "done", "")),
    ({"success": False, "message": "no data"}, (False, "no data", "no data")),
    ({"success": False, "error": "bad city", "content": "x"}, (False, "x", "bad city")),
    ({"success": False}, (False, "", "插件工具执行失败")),
    (
        {"success": True, "stop_after_execution": "yes"},
        (False, "", "插件工具返回字段 `stop_after_execution` 必须为布尔值。"),
    ),
    ((True, " 已完成 "), (True, "已完成", "")),
    ((False, "发送失败"), (False, "", "发送失败")),
    ([True, "ok", 2], (True, "ok", "")),
    ((True, None), (True, "", "")),
    ((True,), (True, "", "")),
    ("  text  ", (True, "text", "")),
    (None, (True, "", "")),
    (42, (True, "42", "")),
    ([1, 2], (True, "[1, 2]", "")),
]


@pytest.mark.parametrize(("value", "expected"), CASES, ids=[repr(c[0]) for c in CASES])
def test_a_return_value_reads_as_in_maibot(value: Any, expected: tuple[bool, str, str]) -> None:
    result = normalize_result("tool", tool_result(value))
    success, content, error = expected

    assert result.success is success
    assert result.content == content
    assert result.error_message == error


def test_stop_after_execution_is_kept_for_the_embedder() -> None:
    result = normalize_result("tool", tool_result({"content": "ok", "stop_after_execution": True}))

    assert result.success
    assert result.structured_content["stop_after_execution"] is True
