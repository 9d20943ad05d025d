"""The MaiBot compatibility layer: a MaiBot SDK 2.x plugin loaded and served as MaiBot does.

``imports`` maps ``import maibot_sdk`` inside a MaiBot plugin to
``plughost_sdk.maibot``; ``loader`` brings a ``MaiBotPlugin`` to life (its
context, configuration, components) and reads its results; ``config`` plans the
plugin's ``config.toml`` from its config model. The plugin loader imports
``loader`` only when a MaiBot plugin loads (tomlkit is not paid for otherwise).

May import: ``process``. The plugin loader and the runner's requests use it; it
never imports them.
"""
