"""docs/examples/message_pipeline.py runs as the embedding guide says, through real runners."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "message_pipeline.py"


async def test_the_message_pipeline_example_routes_each_message_as_documented(
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = importlib.util.spec_from_file_location("message_pipeline_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    await module.main()
    lines = capsys.readouterr().out.splitlines()

    assert lines[1] == '  after pre-processing: "what\'s the weather in Tokyo?"'
    assert "Answer in one or two sentences." in lines[2]
    assert lines[3].startswith('  tool get_weather: {"city": "Tokyo", "weather": {')
    assert "command plughost.example-chat-guard.weather answered: 'Oslo: snow, -3 °C'" in lines[6]
    assert lines[-1] == "  dropped by plughost.example-chat-guard.spam_filter"
    assert len(lines) == 9
