"""Run a MaiBot plugin's command as MaiBot does, for differential tests.

Transcribes, in our words, what MaiBot 1.3 does with one command call:
``runner_main._handle_invoke`` (success unless the handler raised; the value,
or ``str()`` of the exception, as the result), the msgpack link between its
runner and host, ``ComponentQueryService._build_command_executor`` (the
reading of the result, ``is_local_operator`` from the message) and the keyword
arguments ``bot.py`` gives the ``chat.command.after_execute`` hook.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import msgpack


def maibot_is_local_operator(message: Mapping[str, Any]) -> bool:
    """MaiBot's rule: the console platform, marked so in the message's additional config."""
    extra = message.get("message_info", {}).get("additional_config", {})
    return message.get("platform") == "bot_console" and extra.get("is_local_operator") is True


def find_command(plugin: Any, text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The plugin's first command ``text`` triggers, and its named groups."""
    for component in plugin.get_components():
        if component["type"] != "COMMAND":
            continue
        metadata = component["metadata"]
        pattern = metadata.get("command_pattern")
        if pattern and (found := re.search(pattern, text)) is not None:
            return component, found.groupdict()
        if any(text.startswith(alias) for alias in metadata.get("aliases", [])):
            return component, {}
    raise LookupError(f"no command of the plugin matches {text!r}")


async def after_execute_under_maibot(
    plugin: Any, plugin_id: str, text: str, message: dict[str, Any]
) -> dict[str, Any]:
    """The keyword arguments (less ``message``) MaiBot's ``chat.command.after_execute`` sends.

    Its hook dispatcher adds ``hook_name`` to the bot's arguments.
    """
    component, groups = find_command(plugin, text)
    metadata = component["metadata"]
    info = message.get("message_info", {})
    args = {
        "text": text,
        "stream_id": message.get("session_id", ""),
        "group_id": (info.get("group_info") or {}).get("group_id", ""),
        "platform": message.get("platform", ""),
        "user_id": (info.get("user_info") or {}).get("user_id", ""),
        "is_local_operator": maibot_is_local_operator(message),
        "matched_groups": groups,
        "message": message,
        "plugin_config": {},
    }
    try:
        value = await getattr(plugin, metadata["handler_name"])(**args)
        payload = {"success": True, "result": value}
    except Exception as exc:
        payload = {"success": False, "result": str(exc)}
    payload = msgpack.unpackb(msgpack.packb(payload), raw=False)
    result = payload["result"]
    intercept = bool(metadata.get("intercept_message_level", 0))
    if isinstance(result, list | tuple) and len(result) >= 3:
        response = None if result[1] is None else str(result[1])
        intercept = bool(result[2])
    else:
        response = None if result is None else str(result)
    return {
        "hook_name": "chat.command.after_execute",
        "command_name": component["name"],
        "plugin_id": plugin_id,
        "matched_groups": groups,
        "success": bool(payload["success"]),
        "response": response,
        "intercept_message_level": intercept,
        "continue_process": not intercept,
    }
