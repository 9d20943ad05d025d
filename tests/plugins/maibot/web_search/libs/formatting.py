"""Helpers imported as ``libs.formatting``; they look the SDK up by name at call time."""

import importlib
from typing import Any


def describe(config: Any, query: str) -> str:
    sdk = importlib.import_module("maibot_sdk")
    types = importlib.import_module("maibot_sdk.types")
    return (
        f"query={query} url={config.search.base_url} max={config.search.max_results} "
        f"typed={isinstance(config, sdk.PluginConfigBase)} "
        f"param={types.ToolParamType.STRING.value}"
    )
