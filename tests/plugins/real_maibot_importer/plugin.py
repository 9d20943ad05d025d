"""A plughost-native plugin that imports maibot_sdk: it must get the real one, not the mapping."""

from typing import Any

import maibot_sdk

from plughost_sdk import Plugin, Tool


class RealMaibotImporter(Plugin):
    @Tool("which_maibot_sdk", brief_description="Where this plugin's maibot_sdk comes from")
    async def which_maibot_sdk(self, **kwargs: Any) -> dict[str, Any]:
        return {"content": maibot_sdk.MaiBotPlugin.__module__, "file": maibot_sdk.__file__}


def create_plugin() -> RealMaibotImporter:
    return RealMaibotImporter()
