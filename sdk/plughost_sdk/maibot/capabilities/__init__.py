"""``maibot_sdk.capabilities``: the proxies behind ``self.ctx.<group>`` of a MaiBot plugin.

One module per group, as in MaiBot SDK 2.16, so a plugin importing one
(``from maibot_sdk.capabilities.send import SendResult``) finds it. Each method
is a capability call with the same arguments MaiBot's proxy sends.
"""
