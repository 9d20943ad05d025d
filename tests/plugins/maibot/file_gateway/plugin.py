"""文件适配器插件: a duplex @MessageGateway whose chat platform is a pair of JSON-lines files.

Each line the outside world appends to ``inbox.jsonl`` (in the plugin's data
directory) is a MaiBot message dict; it is routed to the host, and whether the
host accepted it is appended to ``routed.jsonl``. Every message the host sends
out through the gateway is appended to ``outbox.jsonl``.
"""

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

from maibot_sdk import MaiBotPlugin, MessageGateway

GATEWAY = "file_link"


class FileGatewayPlugin(MaiBotPlugin):
    def __init__(self) -> None:
        super().__init__()
        self._task: asyncio.Task[None] | None = None
        self._sent = 0

    async def on_load(self) -> None:
        self._task = asyncio.create_task(self._pump())

    async def on_unload(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def on_config_update(self, scope: str, config_data: dict[str, Any], version: str) -> None:
        pass

    def _file(self, name: str) -> Path:
        return Path(self.ctx.paths.data_dir) / name

    async def _pump(self) -> None:
        await self.ctx.gateway.update_state(GATEWAY, ready=True, account_id="bot-1")
        offset = 0
        while True:
            inbox = self._file("inbox.jsonl")
            if inbox.exists():
                data = inbox.read_bytes()
                end = data.rfind(b"\n") + 1
                for line in data[offset:end].splitlines():
                    await self._route(json.loads(line))
                offset = max(offset, end)
            await asyncio.sleep(0.02)

    async def _route(self, message: dict[str, Any]) -> None:
        try:
            accepted = await self.ctx.gateway.route_message(GATEWAY, message)
            outcome: dict[str, Any] = {"id": message.get("message_id"), "accepted": accepted}
        except Exception as exc:
            outcome = {"id": message.get("message_id"), "error": str(exc)}
        with self._file("routed.jsonl").open("a", encoding="utf-8") as routed:
            routed.write(json.dumps(outcome, ensure_ascii=False) + "\n")

    @MessageGateway("duplex", name=GATEWAY, platform="filechat", protocol="jsonl")
    async def deliver(
        self,
        message: dict[str, Any],
        route: dict[str, Any],
        metadata: dict[str, Any],
        **kwargs: Any,
    ) -> dict[str, Any]:
        self._sent += 1
        line = {
            "stream": message.get("session_id"),
            "group": (message["message_info"].get("group_info") or {}).get("group_id"),
            "segments": message.get("raw_message"),
            "platform": route.get("platform"),
            "account": route.get("account_id"),
        }
        with self._file("outbox.jsonl").open("a", encoding="utf-8") as outbox:
            outbox.write(json.dumps(line, ensure_ascii=False) + "\n")
        return {"success": True, "external_message_id": f"out-{self._sent}"}


def create_plugin() -> FileGatewayPlugin:
    return FileGatewayPlugin()
