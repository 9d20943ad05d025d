"""Raises at import time."""

from plughost_sdk import Plugin

raise RuntimeError("this plugin cannot be imported")


class Never(Plugin):
    pass


def create_plugin() -> Never:
    return Never()
