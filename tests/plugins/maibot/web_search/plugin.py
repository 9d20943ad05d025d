"""网页搜索插件: puts its folder on sys.path and imports its own modules by top-level name."""

import os
import sys
from typing import Any

_PLUGIN_DIR = os.path.dirname(os.path.abspath(__file__))
if _PLUGIN_DIR not in sys.path:
    sys.path.insert(0, _PLUGIN_DIR)

from config import SearchConfig  # noqa: E402
from libs.formatting import describe  # noqa: E402
from maibot_sdk import MaiBotPlugin, Tool  # noqa: E402


class WebSearchPlugin(MaiBotPlugin):
    config_model = SearchConfig

    async def on_load(self) -> None:
        self.ctx.logger.info("搜索插件已加载: %s", self.config.search.base_url)

    async def on_unload(self) -> None:
        pass

    async def on_config_update(self, scope: str, config_data: dict[str, Any], version: str) -> None:
        pass

    @Tool(
        "web_search",
        description="搜索网页",
        parameters={"query": {"type": "string", "description": "搜索词", "required": True}},
    )
    async def web_search(self, query: str, **kwargs: Any) -> dict[str, Any]:
        return {"content": describe(self.config, query)}


def create_plugin():
    return WebSearchPlugin()
