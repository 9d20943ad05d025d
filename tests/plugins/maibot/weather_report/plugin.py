"""天气播报插件: tools with typed config and no config.toml, positional ctx calls."""

from typing import Any

from maibot_sdk import CONFIG_RELOAD_SCOPE_SELF, Field, MaiBotPlugin, PluginConfigBase, Tool
from maibot_sdk.types import ToolParameterInfo, ToolParamType


class PluginSection(PluginConfigBase):
    """插件基本信息"""

    config_version: str = Field(default="1.0.0", description="配置文件版本")
    enabled: bool = Field(default=True, description="是否启用插件")


class WeatherSection(PluginConfigBase):
    """天气设置"""

    default_city: str = Field(default="北京", description="未指定城市时查询的城市")
    unit: str = Field(default="celsius", description="温度单位")
    max_days: int = Field(default=3, ge=1, le=7, description="最多预报天数")


class WeatherConfig(PluginConfigBase):
    plugin: PluginSection = Field(default_factory=PluginSection)
    weather: WeatherSection = Field(default_factory=WeatherSection)


FAKE_WEATHER = {"北京": "晴 21°C", "上海": "小雨 18°C"}


class WeatherReportPlugin(MaiBotPlugin):
    config_model = WeatherConfig

    async def on_load(self) -> None:
        self.ctx.logger.info("天气插件已加载，默认城市 %s", self.config.weather.default_city)

    async def on_unload(self) -> None:
        pass

    async def on_config_update(self, scope: str, config_data: dict[str, Any], version: str) -> None:
        if scope == CONFIG_RELOAD_SCOPE_SELF:
            self.ctx.logger.info("配置已更新: %s", self.config.weather.default_city)

    @Tool(
        "get_weather",
        brief_description="查询指定城市的天气",
        detailed_description="返回城市当前天气。",
        parameters=[
            ToolParameterInfo(
                name="city", param_type=ToolParamType.STRING, description="城市名称", required=False
            ),
            ToolParameterInfo(
                name="days",
                param_type=ToolParamType.INTEGER,
                description="预报天数",
                required=False,
                default=1,
            ),
        ],
    )
    async def get_weather(self, city: str = "", days: int = 1, **kwargs: Any) -> dict[str, Any]:
        city = city or self.config.weather.default_city
        if city not in FAKE_WEATHER:
            return {"success": False, "message": f"没有 {city} 的天气数据"}
        days = min(days, self.config.weather.max_days)
        return {"content": f"{city}: {FAKE_WEATHER[city]} ({days} 天)", "city": city}

    @Tool(
        "broadcast_weather",
        description="把天气播报到当前聊天",
        parameters={"city": {"type": "string", "description": "城市名称", "required": True}},
    )
    async def broadcast_weather(
        self, city: str, stream_id: str = "", chat_id: str = "", **kwargs: Any
    ):
        nickname = await self.ctx.config.get("bot.nickname", "麦麦")
        sent = await self.ctx.send.text(
            f"{nickname}播报: {city} {FAKE_WEATHER.get(city, '未知')}", stream_id
        )
        if not sent:
            return False, "发送失败"
        return True, f"已播报 {city} 天气到 {chat_id}"


def create_plugin():
    return WeatherReportPlugin()
