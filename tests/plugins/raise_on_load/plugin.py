"""on_load raises."""

from plughost_sdk import Plugin


class RaiseOnLoad(Plugin):
    async def on_load(self) -> None:
        raise ValueError("database unreachable")


def create_plugin() -> RaiseOnLoad:
    return RaiseOnLoad()
