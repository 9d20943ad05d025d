"""``maibot_sdk.capabilities.logging``: removed in MaiBot's SDK as well.

Log with ``self.ctx.logger`` or the standard ``logging`` module; records reach
the host's logs tagged with the plugin id.
"""
