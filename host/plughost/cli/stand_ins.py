"""Stand-in answers, during ``plughost check``, for what the embedding application provides.

``plughost check`` loads plugins in a private host with no chat platform, bot
configuration or model behind it. A plugin that calls ``ctx.config.get`` or
``ctx.send.text`` in ``on_load`` would fail there, although the application
that embeds plughost answers those calls when the plugin runs for real. So
check answers every capability a checked plugin's manifest lists and the host
does not answer itself (``send.*`` and ``llm.*`` included when the host's own
answer finds no gateway or model behind it):

- with the operator's answer, from ``plughost check --answers FILE``: a TOML
  file whose keys are capability names (quoted, since they hold a dot) and
  whose values are returned to the plugin as they are, in the shape the
  embedding application's handler returns (``"config.get" = { success = true,
  value = "麦麦" }``); a ``group.*`` key answers the whole group. An answer
  given here is used even where the host has a default of its own;
- otherwise with a marked stand-in, ``{"success": True, "value": <the call's
  "default" argument, or None>, "stand_in": "plughost check"}``, which MaiBot's
  SDK reads as the default the plugin passed to ``config.get``.

Which capabilities each plugin had answered so is in the check's report.
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from plughost.host import PluginHost
from plughost.plugins.source import PluginSource
from plughost.runners.capabilities import CapabilityCall, CapabilityHandler
from plughost.runners.channel import RemoteError

__all__ = ["STAND_IN_MARK", "Answered", "StandIns", "load_answers"]

STAND_IN_MARK = "plughost check"
"""The ``stand_in`` value of a stand-in answer, so a plugin (or its log) can tell."""

Answered = Literal["answers", "stand-in"]
"""How check answered a capability: from the operator's file, or with a marked stand-in."""

_EXAMPLE = '"config.get" = { success = true, value = "麦麦" }'
_APPLICATION_GROUPS = ("send.", "llm.")
"""Groups the host answers only through what the application gives it (gateways, models)."""


def load_answers(path: Path) -> dict[str, Any]:
    """Read an ``--answers`` file: capability name -> the answer to return.

    Raises:
        ValueError: the file cannot be read, is not TOML, or has a key that is not a
            capability name; the message names the file and says what to write.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{path}: cannot be read ({exc.strerror}); pass a TOML file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(
            f"{path}: invalid TOML ({exc}); write one line per capability, such as {_EXAMPLE}"
        ) from None
    bad = [key for key in data if "." not in key or key.startswith(".") or key.endswith(".")]
    if bad:
        raise ValueError(
            f"{path}: {', '.join(map(repr, bad))} is not a capability name such as "
            f"'config.get'; quote each name, as in {_EXAMPLE}"
        )
    return data


@dataclass(slots=True)
class StandIns:
    """Answers one check's plugins for the capabilities the application would provide."""

    answers: dict[str, Any] = field(default_factory=dict)
    used: dict[str, dict[str, Answered]] = field(default_factory=dict)
    """Plugin id -> each capability answered here, and how."""

    def install(self, host: PluginHost, sources: Iterable[PluginSource]) -> None:
        """Register the answers on ``host`` before it starts.

        Each name in the answers file takes that name; each capability a manifest
        lists that nothing on ``host`` answers gets the marked stand-in.
        """
        for name in self.answers:
            host.register_capability(name, self._answer)
        listed = {name for source in sources for name in source.manifest.capabilities}
        for name in sorted(listed - set(self.answers)):
            if "." not in name:
                continue
            own = host.capabilities.handler(name)
            if own is None:
                host.capabilities.register(name, self._answer, fallback=True)
            elif name.startswith(_APPLICATION_GROUPS):
                host.capabilities.register(name, _Unless(own, self._answer))

    async def _answer(self, call: CapabilityCall) -> Any:
        group = call.capability.split(".", 1)[0] + ".*"
        key = call.capability if call.capability in self.answers else group
        answered: Answered = "answers" if key in self.answers else "stand-in"
        self.used.setdefault(call.plugin_id, {})[call.capability] = answered
        if answered == "answers":
            return copy.deepcopy(self.answers[key])
        return {"success": True, "value": call.args.get("default"), "stand_in": STAND_IN_MARK}


@dataclass(frozen=True, slots=True)
class _Unless:
    """The host's own answer, or the stand-in where the host has nothing to answer with."""

    own: CapabilityHandler
    stand_in: CapabilityHandler

    async def __call__(self, call: CapabilityCall) -> Any:
        try:
            return await self.own(call)
        except RemoteError as exc:
            if exc.code != "capability_not_provided":
                raise
        return await self.stand_in(call)
