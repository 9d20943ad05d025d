"""收藏夹: writes its own folder the way MaiBot plugins do.

``create_plugin()`` copies a config template into the folder the first time,
``on_load`` creates ``data/`` beside ``plugin.py``, and the tools keep their
state in files there; nothing is written through the SDK's data directory.
"""

import json
import os
import shutil
from pathlib import Path
from typing import Any

from maibot_sdk import MaiBotPlugin, Tool

HERE = Path(__file__).resolve().parent
STORE = HERE / "data" / "favourites.json"


class FolderKeeperPlugin(MaiBotPlugin):
    async def on_load(self) -> None:
        (HERE / "data").mkdir(exist_ok=True)
        if not STORE.exists():
            STORE.write_text("[]", encoding="utf-8")

    async def on_unload(self) -> None:
        pass

    @Tool(
        "favourite_add",
        description="收藏一条内容",
        parameters={"item": {"type": "string", "description": "内容", "required": True}},
    )
    async def add(self, item: str, **kwargs: Any) -> str:
        items = json.loads(STORE.read_text(encoding="utf-8"))
        items.append(item)
        STORE.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
        return f"已收藏，共 {len(items)} 条"

    @Tool("favourite_list", description="列出收藏")
    async def list_all(self, **kwargs: Any) -> str:
        return ",".join(json.loads(STORE.read_text(encoding="utf-8")))

    @Tool(
        "favourite_fill",
        description="写一个指定大小的文件（测试配额）",
        parameters={
            "name": {"type": "string", "description": "文件名", "required": True},
            "megabytes": {"type": "integer", "description": "大小", "required": True},
        },
    )
    async def fill(self, name: str, megabytes: int, **kwargs: Any) -> str:
        try:
            with open(HERE / "data" / name, "wb") as handle:
                for _ in range(megabytes):
                    handle.write(b"\0" * 2**20)
        except OSError as exc:
            # What was written before the refusal still counts against the quota: a
            # tidy plugin removes it, so the next file is judged on its own size.
            (HERE / "data" / name).unlink(missing_ok=True)
            return f"refused: {os.strerror(exc.errno or 0)}"
        return "written"

    @Tool(
        "favourite_export",
        description="把收藏导出到指定文件",
        parameters={"path": {"type": "string", "description": "文件路径", "required": True}},
    )
    async def export(self, path: str, **kwargs: Any) -> str:
        Path(path).write_text(STORE.read_text(encoding="utf-8"), encoding="utf-8")
        return f"已导出到 {path}"

    @Tool("favourite_config", description="读取首次启动时复制的配置")
    async def config_text(self, **kwargs: Any) -> str:
        return (HERE / "config.toml").read_text(encoding="utf-8")


def create_plugin() -> FolderKeeperPlugin:
    if not (HERE / "config.toml").exists():
        shutil.copy(HERE / "config_template.toml", HERE / "config.toml")
    return FolderKeeperPlugin()
