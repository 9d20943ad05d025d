"""骰子助手: commands returning each shape published plugins return, and a command-result log."""

from typing import Any

from maibot_sdk import API, Command, HookHandler, MaiBotPlugin
from maibot_sdk.types import HookMode


class DiceRollerPlugin(MaiBotPlugin):
    command_log: list[dict[str, Any]]

    async def on_load(self) -> None:
        self.command_log = []
        self.ctx.logger.info("骰子助手已加载")

    async def on_unload(self) -> None:
        self.command_log.clear()

    async def on_config_update(self, scope: str, config_data: dict[str, Any], version: str) -> None:
        self.ctx.logger.debug("配置更新: %s %s", scope, version)

    @Command(
        "roll", description="掷骰子，如 /roll 2d6", pattern=r"^/roll (?P<count>\d+)d(?P<sides>\d+)$"
    )
    async def handle_roll(self, matched_groups: dict[str, str] | None = None, **kwargs: Any):
        groups = matched_groups or {}
        count, sides = int(groups.get("count", 1)), int(groups.get("sides", 6))
        return True, f"掷出 {count} 个 {sides} 面骰，最大 {count * sides}", True

    @Command("roll_usage", description="掷骰子用法", pattern=r"^/roll$")
    async def handle_roll_usage(self, **kwargs: Any):
        return False, "用法: /roll NdM"

    @Command("coin", description="抛硬币", aliases=["/coin", "/抛硬币"], intercept_message_level=1)
    async def handle_coin(self, **kwargs: Any):
        return True, "正面"

    @Command("dice_help", description="帮助", pattern=r"^/dice help$")
    async def handle_help(self, **kwargs: Any) -> str:
        return "可用命令: /roll NdM, /coin"

    @Command("dice_quiet", description="静默命令", pattern=r"^/dice quiet$")
    async def handle_quiet(self, **kwargs: Any) -> None:
        return None

    @Command("dice_reset", description="重置骰子", pattern=r"^/dice reset$")
    async def handle_reset(self, **kwargs: Any):
        raise RuntimeError("骰子丢了")

    @Command("dice_admin", description="管理员命令", pattern=r"^/dice admin$")
    async def handle_admin(self, is_local_operator: bool = False, **kwargs: Any):
        who = "本地操作员" if is_local_operator else "普通用户"
        return True, f"{who} (is_local_operator={is_local_operator!r})", False

    @HookHandler("chat.command.after_execute", name="command_logger", mode=HookMode.OBSERVE)
    async def log_command(self, **kwargs: Any) -> None:
        self.command_log.append({k: v for k, v in kwargs.items() if k != "message"})

    @API("command_log", description="命令执行记录")
    async def get_command_log(self, **kwargs: Any) -> list[dict[str, Any]]:
        return list(self.command_log)


def create_plugin() -> DiceRollerPlugin:
    return DiceRollerPlugin()
