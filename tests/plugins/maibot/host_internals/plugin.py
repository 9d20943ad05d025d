"""A plugin that reaches into MaiBot's own host code, which only exists inside MaiBot."""

from maibot_sdk import MaiBotPlugin
from src.common.logger import get_logger

logger = get_logger("host_internals")


class HostInternalsPlugin(MaiBotPlugin):
    pass


def create_plugin() -> HostInternalsPlugin:
    return HostInternalsPlugin()
