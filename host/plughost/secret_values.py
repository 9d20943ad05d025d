"""Which values of a plugin's configuration the redactor takes for that plugin's secrets.

A plugin writes its own ``config.toml``, so what it calls a secret is its
claim, and the redactor (:mod:`plughost.redaction`) masks each claimed value in
the plugin's text. Two things keep that claim from costing the host or hiding
what the operator must see:

- **Bounds.** At most :data:`MAX_SECRETS` values per plugin, each of at most
  :data:`MAX_SECRET_LENGTH` characters and :data:`MAX_SECRET_CHARS` in all; the
  walk of the configuration stops after :data:`MAX_ENTRIES` entries.
- **Plausibility.** A value that is one of the host's own words (a plugin id, a
  folder, a tool or component name, an event kind, a word of the host's
  messages) or too plain to be a secret (one word, one number, too few distinct
  characters) is not a secret: masking it would blank ordinary text.

Each refused value is reported as a warning naming the plugin and the key,
never the value. What does not live here: masking (:mod:`plughost.redaction`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Final

__all__ = [
    "HOST_VOCABULARY",
    "MAX_ENTRIES",
    "MAX_EXAMINED",
    "MAX_SECRETS",
    "MAX_SECRET_CHARS",
    "MAX_SECRET_LENGTH",
    "MIN_LENGTH",
    "SECRET_KEY",
    "Screened",
    "screen_config",
    "too_plain",
]

SECRET_KEY: Final = re.compile(
    r"(key|token|secret|passw|credential|auth|cookie|session)", re.IGNORECASE
)
"""A key or variable name under which a value is taken for a secret."""
MIN_LENGTH: Final = 6
"""Shorter values are too likely to occur in ordinary text; they are skipped silently."""
MAX_SECRET_LENGTH: Final = 4096
"""Characters of one secret (a PEM private key fits)."""
MAX_SECRETS: Final = 128
"""Secrets learned from one plugin's configuration."""
MAX_SECRET_CHARS: Final = 32 * 1024
"""Characters of all of one plugin's secrets together."""
MAX_ENTRIES: Final = 16384
"""Entries (tables, arrays, values) of one configuration looked at for secrets."""
MAX_EXAMINED: Final = 4 * MAX_SECRETS
"""Secret-looking values of one configuration checked against the host's words; the rest are
dropped unchecked, so a configuration of thousands costs the host no more than this many."""
_MIN_BITS: Final = 16.0
"""Below this much Shannon information (``abcabc``, ``123123``) a value is no secret."""
_PLAIN_WORD: Final = 16
"""An ASCII word or number shorter than this is no secret (``community``, ``failed``)."""

HOST_VOCABULARY: Final = frozenset(
    {
        "[redacted]",
        "Traceback (most recent call last):",
        "config.toml",
        "_manifest.json",
        "plugin.py",
        "plughost",
        "plughost_runner",
        "plughost_sdk",
        "tool_search",
        "limits.cpu_seconds",
        "limits.memory_mb",
        "limits.disk_mb",
        "network_grants",
        "write_grants",
    }
)
"""Words of the host's messages no plain-word rule catches; the host adds event kinds and ids."""


class _Keys:
    """The keys of some values: the first few by name, then a count."""

    _SHOWN = 5

    def __init__(self) -> None:
        self.first: list[str] = []
        self.count = 0

    def add(self, key: str) -> None:
        if len(self.first) < self._SHOWN:
            self.first.append(key)
        self.count += 1

    def __str__(self) -> str:
        more = self.count - len(self.first)
        return ", ".join(self.first) + (f" and {more} more" if more else "")


@dataclass(slots=True)
class Screened:
    """What screening one configuration kept, and why the rest was refused.

    Attributes:
        secrets: The values to mask in the plugin's text, in the order found.
        refused: For each reason, the keys of the values refused for it.
        over_bounds: Keys of the values dropped for the per-plugin bounds.
        truncated: The configuration had more than :data:`MAX_ENTRIES` entries.
    """

    secrets: dict[str, None] = field(default_factory=dict)
    refused: dict[str, _Keys] = field(default_factory=dict)
    over_bounds: _Keys = field(default_factory=lambda: _Keys())
    truncated: bool = False

    def warnings(self, plugin_id: str) -> list[str]:
        """One warning per kind of refusal, naming the plugin and (a few of) the keys."""
        found = [
            f"plugin {plugin_id}: the config.toml value under {keys} is not masked in the "
            f"plugin's output: it {reason}"
            if keys.count == 1
            else f"plugin {plugin_id}: the config.toml values under {keys} are not masked in "
            f"the plugin's output: each {reason}"
            for reason, keys in self.refused.items()
        ]
        if self.over_bounds.count:
            found.append(
                f"plugin {plugin_id}: config.toml has more secret-looking values than the host "
                f"masks for one plugin ({MAX_SECRETS} values, {MAX_SECRET_CHARS:,} characters "
                f"in all); {self.over_bounds} are not masked in its output"
            )
        if self.truncated:
            found.append(
                f"plugin {plugin_id}: config.toml has more than {MAX_ENTRIES:,} entries; "
                "values past them are not looked at for secrets"
            )
        return found


def screen_config(config: Mapping[str, Any], is_host_word: Callable[[str], bool]) -> Screened:
    """Pick a plugin's secrets from its configuration, within the bounds.

    Args:
        config: The plugin's parsed ``config.toml``.
        is_host_word: Whether a value occurs in one of the host's own words.
    """
    screened = Screened()
    total = examined = 0
    for key, value in _candidates(config, screened):
        if len(value) < MIN_LENGTH or value in screened.secrets:
            continue
        examined += 1
        reason = _refusal(value, is_host_word) if examined <= MAX_EXAMINED else None
        if reason is not None:
            screened.refused.setdefault(reason, _Keys()).add(key)
        elif (
            examined > MAX_EXAMINED
            or len(screened.secrets) >= MAX_SECRETS
            or total + len(value) > MAX_SECRET_CHARS
        ):
            screened.over_bounds.add(key)
        else:
            screened.secrets[value] = None
            total += len(value)
    return screened


def too_plain(value: str) -> bool:
    """Whether ``value`` reads as ordinary text rather than a secret.

    One ASCII word or number shorter than 16 characters (``community``,
    ``failed``, ``20240101``), or a value with less than 16 bits of Shannon
    information (``abcabcabc``).
    """
    if value.isascii() and len(value) < _PLAIN_WORD and (value.isalpha() or value.isdigit()):
        return True
    counts = Counter(value)
    bits = -sum(n * math.log2(n / len(value)) for n in counts.values())
    return bits < _MIN_BITS


def _refusal(value: str, is_host_word: Callable[[str], bool]) -> str | None:
    if len(value) > MAX_SECRET_LENGTH:
        return f"is longer than the {MAX_SECRET_LENGTH:,} characters a secret may have"
    if "\0" in value:
        return "holds a NUL character"
    if is_host_word(value):
        return (
            "is one of the host's own words (a plugin id, folder, tool or component name, "
            "or event kind), which a plugin's secret may not hide"
        )
    if too_plain(value):
        return (
            "is too plain to be a secret (one word or number, or few distinct characters); "
            "a real secret this plain would be masked in ordinary text"
        )
    return None


def _candidates(config: Mapping[str, Any], screened: Screened) -> Iterator[tuple[str, str]]:
    """``(key path, value)`` of every string under a secret-looking key, at any depth.

    The walk is iterative and stops after :data:`MAX_ENTRIES` entries, so a
    configuration nested or sized to exhaust the host costs it a bounded amount.
    """
    stack: list[tuple[str, Any, bool]] = [("", config, False)]
    seen = 0
    while stack:
        path, node, secret = stack.pop()
        seen += 1
        if seen > MAX_ENTRIES:
            screened.truncated = True
            return
        if isinstance(node, str):
            if secret:
                yield path, node
        elif isinstance(node, Mapping):
            room = _room(len(node), seen, screened)
            items = [
                (f"{path}.{k}" if path else str(k), v, bool(SECRET_KEY.search(str(k))))
                for k, v in islice(node.items(), room)
            ]
            stack.extend(reversed(items))
        elif isinstance(node, list):
            # Strings in a list under an ordinary key (a list of keywords) cannot be secrets.
            room = _room(len(node), seen, screened)
            items = [
                (f"{path}[{i}]", v, secret)
                for i, v in enumerate(islice(node, room))
                if secret or not isinstance(v, str)
            ]
            stack.extend(reversed(items))


def _room(size: int, seen: int, screened: Screened) -> int:
    """How many of a table's or list's ``size`` children the walk may still look at."""
    room = MAX_ENTRIES - seen
    if size > room:
        screened.truncated = True
    return room
