"""What the early launch's memo is keyed on stays in step with what a launch reads."""

from __future__ import annotations

from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS

from plughost.mcp import early_launch, sandbox


def test_the_memo_key_covers_every_environment_variable_a_launch_reads() -> None:
    read = {*DEFAULT_INHERITED_ENV_VARS, *sandbox._CACHES}

    assert read <= set(early_launch._ENVIRONMENT)
