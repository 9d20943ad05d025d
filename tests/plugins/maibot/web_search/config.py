"""The plugin's configuration model, imported by plugin.py as the top-level module ``config``."""

from maibot_sdk import Field, PluginConfigBase


class PluginSection(PluginConfigBase):
    """插件基本信息"""

    config_version: str = Field(default="1.1.0", description="配置文件版本")
    enabled: bool = Field(default=True, description="是否启用插件")


class SearchSection(PluginConfigBase):
    """搜索设置"""

    base_url: str = Field(default="http://127.0.0.1:8888", description="SearXNG 地址")
    max_results: int = Field(default=5, ge=1, le=20, description="最多返回条数")


class SearchConfig(PluginConfigBase):
    plugin: PluginSection = Field(default_factory=PluginSection)
    search: SearchSection = Field(default_factory=SearchSection)
