"""call_api's arguments: the ``args`` mapping and keyword arguments together, each given once."""

from __future__ import annotations

from typing import Any

import pytest

from plughost.dispatch.apis import api_arguments


def test_args_and_keywords_are_merged() -> None:
    merged = api_arguments({"timeout": 3, "version": "v"}, {"name": "n"})

    assert merged == {"timeout": 3, "version": "v", "name": "n"}


def test_without_args_the_keywords_are_the_arguments() -> None:
    assert api_arguments(None, {"name": "n"}) == {"name": "n"}


@pytest.mark.parametrize("args", [["timeout", 3], "timeout=3", {1: "x"}])
def test_args_that_are_not_a_mapping_of_names_are_a_caller_mistake(args: Any) -> None:
    with pytest.raises(TypeError, match="must be a mapping of argument names to values"):
        api_arguments(args, {})
