"""计时板: an API whose parameters are named name, timeout and args, called by ctx.api.call."""

from typing import Any

from maibot_sdk import API, MaiBotPlugin, Tool


class TimerBoardPlugin(MaiBotPlugin):
    async def on_load(self) -> None:
        self.timers: dict[str, int] = {}

    async def on_unload(self) -> None:
        self.timers = {}

    async def on_config_update(self, scope: str, config_data: dict[str, Any], version: str) -> None:
        self.ctx.logger.info("计时板配置更新 scope=%s", scope)

    @API("set_timer", description="设置一个命名计时器", version="2", public=True)
    async def set_timer(
        self, name: str, timeout: int, args: list[str] | None = None, **kwargs: Any
    ):
        self.timers = {**getattr(self, "timers", {}), name: timeout}
        return {"timer": name, "seconds": timeout, "args": args or [], "extra": sorted(kwargs)}

    @Tool("tea_timer", description="为泡茶设置计时器")
    async def tea_timer(self, **kwargs: Any) -> dict[str, Any]:
        result = await self.ctx.api.call("set_timer", name="泡茶", timeout=180, args=["绿茶"])
        return {"content": f"{result['timer']} {result['seconds']}s {result['args']}"}


def create_plugin() -> TimerBoardPlugin:
    return TimerBoardPlugin()
