"""A plugin with a ``lookup`` tool; tests.alpha and tests.beta both declare one."""

from __future__ import annotations

from typing import Any

from plughost_sdk import Plugin, Tool


class LookupPlugin(Plugin):
    @Tool("lookup", brief_description="Look something up in beta")
    async def lookup(self, **kwargs: Any) -> str:
        return "beta"


def create_plugin() -> LookupPlugin:
    return LookupPlugin()
