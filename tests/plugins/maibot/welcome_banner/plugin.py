"""欢迎横幅: reads the bot's configuration in on_load, as many published plugins do."""

from typing import Any

from maibot_sdk import MaiBotPlugin, Tool


class WelcomeBannerPlugin(MaiBotPlugin):
    async def on_load(self) -> None:
        self.nickname = await self.ctx.config.get("bot.nickname", "麦麦")
        self.platform = await self.ctx.config.get("bot.platform", "qq")
        if not isinstance(self.nickname, str):
            raise TypeError(f"bot.nickname should be text, got {self.nickname!r}")

    async def on_unload(self) -> None:
        self.nickname = ""

    async def on_config_update(self, scope: str, config_data: dict[str, Any], version: str) -> None:
        if scope == "bot":
            self.nickname = config_data.get("bot", {}).get("nickname", self.nickname)

    @Tool("welcome", description="生成欢迎新成员的横幅")
    async def welcome(self, stream_id: str = "", **kwargs: Any) -> dict[str, Any]:
        banner = f"欢迎来到 {self.platform}，我是 {self.nickname}"
        if stream_id:
            await self.ctx.send.text(banner, stream_id)
        return {"content": banner}


def create_plugin() -> WelcomeBannerPlugin:
    return WelcomeBannerPlugin()
