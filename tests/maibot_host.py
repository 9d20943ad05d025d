"""Capability handlers that answer as MaiBot's host does, for running MaiBot plugins in tests.

The answers have the shapes of MaiBot 1.3's host capability implementations
(``src/plugin_runtime/capabilities/{core,data,render}.py``): ``{"success": True,
...}`` with the result under the key MaiBot's SDK unwraps. Every call is
recorded with the keyword arguments the handler received.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from plughost.host import PluginHost
from plughost.runners.capabilities import CapabilityCall

PNG_1X1 = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201a5b1d4"
        "a40000000049454e44ae426082"
    )
).decode()

BOT_CONFIG = {"bot": {"nickname": "麦麦", "qq_account": "10001"}, "personality": {"core": "活泼"}}


def _lookup(data: Any, key: str, default: Any) -> Any:
    for part in key.split("."):
        if not isinstance(data, dict) or part not in data:
            return default
        data = data[part]
    return data


@dataclass
class MaiBotHost:
    """The MaiBot host's side of the capabilities a test's plugins use."""

    calls: list[CapabilityCall] = field(default_factory=list)
    send_ok: bool = True

    def install(self, host: PluginHost) -> MaiBotHost:
        """Register one handler per capability name on ``host``."""
        answers: dict[str, Callable[[dict[str, Any]], Any]] = {
            "send.text": self._send,
            "send.image": self._send,
            "send.emoji": self._send,
            "send.forward": self._send,
            "send.hybrid": self._send,
            "send.custom": self._send,
            "config.get": lambda a: {
                "success": True,
                "value": _lookup(BOT_CONFIG, str(a.get("key")), a.get("default")),
            },
            "llm.generate": lambda a: {
                "success": True,
                "response": f"回答: {a['prompt']}",
                "reasoning": "",
                "model_name": "fake-model",
                "prompt_tokens": 3,
                "completion_tokens": 5,
                "total_tokens": 8,
            },
            "render.html2png": lambda a: {
                "success": True,
                "result": {"image_base64": PNG_1X1, "mime_type": "image/png", "width": 1},
            },
            "chat.get_stream_by_group_id": lambda a: {
                "success": True,
                "stream": {"stream_id": f"qq:{a['group_id']}", "group_id": a["group_id"]},
            },
            "person.get_id_by_name": lambda a: {
                "success": True,
                "person_id": f"person-{a['person_name']}",
            },
            "database.save": lambda a: {"success": True, "result": {"saved": a["data"]}},
        }
        for name, answer in answers.items():
            host.register_capability(name, self._handler(answer))
        return self

    def _handler(self, answer: Callable[[dict[str, Any]], Any]) -> Any:
        async def handle(call: CapabilityCall) -> Any:
            self.calls.append(call)
            return answer(call.args)

        return handle

    def _send(self, args: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = {"success": self.send_ok}
        if args.get("return_details"):
            result.update(sent=self.send_ok, message_id="msg-1" if self.send_ok else None)
        return result

    def named(self, capability: str) -> list[dict[str, Any]]:
        """The arguments of every recorded call to ``capability``."""
        return [call.args for call in self.calls if call.capability == capability]
