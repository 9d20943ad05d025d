"""Commands whose patterns are read from ``pattern.txt``, next to a well-behaved one.

The tests write the patterns, one a line: command ``greedy`` gets the first,
``greedy_1`` to ``greedy_4`` the next ones (none: no pattern, so it never
runs). Each backtracks catastrophically in Python's ``re`` (``^(a+)+$``,
``(a|a)*``...), or is one RE2 cannot match (backreferences, lookaround), or is
too heavy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from plughost_sdk import Command, Plugin

_LINES = (Path(__file__).parent / "pattern.txt").read_text(encoding="utf-8").splitlines()
PATTERNS = [*(line.strip() for line in _LINES if line.strip()), "", "", "", "", ""]


class HostileCommand(Plugin):
    @Command("ping", description="Answers pong", pattern=r"^/ping (?P<who>\w+)$")
    async def ping(self, matched_groups: dict[str, Any], **kwargs: Any) -> Any:
        return True, f"pong {matched_groups['who']}", True

    @Command("greedy", description="The first pattern under test", pattern=PATTERNS[0])
    async def greedy(self, matched_groups: dict[str, Any], **kwargs: Any) -> Any:
        return True, f"greedy matched {sorted(matched_groups)}", True

    @Command("greedy_1", pattern=PATTERNS[1])
    async def greedy_1(self, **kwargs: Any) -> Any:
        return True, "greedy_1 matched", True

    @Command("greedy_2", pattern=PATTERNS[2])
    async def greedy_2(self, **kwargs: Any) -> Any:
        return True, "greedy_2 matched", True

    @Command("greedy_3", pattern=PATTERNS[3])
    async def greedy_3(self, **kwargs: Any) -> Any:
        return True, "greedy_3 matched", True

    @Command("greedy_4", pattern=PATTERNS[4])
    async def greedy_4(self, **kwargs: Any) -> Any:
        return True, "greedy_4 matched", True


def create_plugin() -> HostileCommand:
    return HostileCommand()
