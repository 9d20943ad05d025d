"""每日摘要插件: a background task started in on_load, LLM and render calls, image sending."""

import asyncio
import contextlib
from typing import Any

from maibot_sdk import Field, MaiBotPlugin, PluginConfigBase, Tool


class PluginSection(PluginConfigBase):
    config_version: str = Field(default="1.0.0", description="配置文件版本")


class DigestSection(PluginConfigBase):
    """摘要设置"""

    interval_seconds: float = Field(default=0.05, description="后台摘要的间隔（秒）")
    target_stream: str = Field(default="qq:digest", description="摘要发送到的聊天流")
    topic: str = Field(default="今日新闻", description="摘要主题")


class DigestConfig(PluginConfigBase):
    plugin: PluginSection = Field(default_factory=PluginSection)
    digest: DigestSection = Field(default_factory=DigestSection)


class DailyDigestPlugin(MaiBotPlugin):
    config_model = DigestConfig

    def __init__(self) -> None:
        super().__init__()
        self._task: asyncio.Task[None] | None = None
        self.rounds = 0
        self.last_digest = ""

    async def on_load(self) -> None:
        self._task = asyncio.create_task(self._digest_loop())

    async def on_unload(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def on_config_update(self, scope: str, config_data: dict[str, Any], version: str) -> None:
        pass

    async def _digest_loop(self) -> None:
        while True:
            try:
                await self._make_digest(self.config.digest.target_stream)
                self.rounds += 1
            except Exception as exc:
                self.ctx.logger.warning("摘要失败: %s", exc)
            await asyncio.sleep(self.config.digest.interval_seconds)

    async def _make_digest(self, stream_id: str) -> bool:
        reply = await self.ctx.llm.generate(f"总结{self.config.digest.topic}")
        self.last_digest = reply.get("response", "")
        image = await self.ctx.render.html2png(f"<h1>{self.last_digest}</h1>")
        return bool(await self.ctx.send.image(image["image_base64"], stream_id))

    @Tool("digest_status", description="查看后台摘要任务的状态")
    async def digest_status(self, **kwargs: Any) -> dict[str, Any]:
        running = self._task is not None and not self._task.done()
        return {"content": f"rounds={self.rounds}", "running": running, "last": self.last_digest}

    @Tool("digest_now", description="立即生成摘要并发送到当前聊天")
    async def digest_now(self, stream_id: str = "", **kwargs: Any) -> tuple[bool, str]:
        if not await self._make_digest(stream_id):
            return False, "摘要发送失败"
        return True, self.last_digest


def create_plugin() -> DailyDigestPlugin:
    return DailyDigestPlugin()
