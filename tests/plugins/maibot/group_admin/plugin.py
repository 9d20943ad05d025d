"""群管助手: commands, a get_components() override that makes a tool group-only, positional ctx."""

from typing import Any

from maibot_sdk import Command, MaiBotPlugin, Tool


class GroupAdminPlugin(MaiBotPlugin):
    async def on_load(self) -> None:
        pass

    async def on_unload(self) -> None:
        pass

    async def on_config_update(self, scope: str, config_data: dict[str, Any], version: str) -> None:
        pass

    def get_components(self) -> list[dict[str, Any]]:
        components = super().get_components()
        for component in components:
            if component["name"] == "mute_member":
                component["chat_scope"] = "group"  # only offered in group chats
        return components

    @Command("who", description="查询成员的 person id", pattern=r"^/who (?P<name>\S+)$")
    async def handle_who(self, stream_id: str = "", matched_groups: Any = None, **kwargs: Any):
        name = (matched_groups or {}).get("name", "")
        person_id = await self.ctx.person.get_id_by_name(name)
        await self.ctx.send.text(f"{name} 的 person id 是 {person_id}", stream_id)
        return True, f"查询了 {name}", True

    @Command("rules", description="发送群规", aliases=["/rules", "/群规"])
    async def handle_rules(self, stream_id: str = "", **kwargs: Any):
        rules = [{"type": "text", "data": "1. 友善"}, {"type": "text", "data": "2. 不刷屏"}]
        ok = await self.ctx.send.forward(rules, stream_id)
        return ok, "群规已发送" if ok else "群规发送失败"

    @Tool(
        "mute_member",
        description="在群里禁言一名成员",
        parameters={
            "group_id": {"type": "string", "description": "群号", "required": True},
            "person_name": {"type": "string", "description": "成员名称", "required": True},
        },
    )
    async def mute_member(self, group_id: str, person_name: str, **kwargs: Any):
        stream = await self.ctx.chat.get_stream_by_group_id(group_id)
        if not stream:
            return False, f"找不到群 {group_id}"
        person_id = await self.ctx.person.get_id_by_name(person_name)
        return True, f"已在 {stream['stream_id']} 禁言 {person_id}"


def create_plugin() -> GroupAdminPlugin:
    return GroupAdminPlugin()
