"""Command patterns: Python's ``re`` syntax, matched by RE2 in time linear in the text.

A MaiBot command's pattern comes from a plugin, and the text it is tried on
from whoever writes to the bot. Python's backtracking ``re`` needs seconds for
``^(a+)+$`` against 26 characters, and it would run on the host's loop; so
command patterns are matched the way schema patterns are
(:mod:`plughost.tools.patterns`): with RE2, whatever the pattern. RE2 has no
backreferences, lookaround, atomic groups, possessive quantifiers or
conditionals; a command whose pattern uses one is refused, never matched some
other way: it never runs, and the host says so when the plugin registers it
(``command.refused``, naming the plugin, the command and the fix). The
plugin's other commands keep working: an operator never edits a third-party
plugin to make it load.

Bounds, so one message costs the host a bounded amount whatever the plugins
declared: a pattern has at most :data:`MAX_PATTERN` characters and compiles to
at most :data:`MAX_PROGRAM` RE2 instructions (else it is refused), one
plugin's to :data:`MAX_PLUGIN_PROGRAM` together (else the plugin fails at
stage ``declare``: :func:`command_problem`), and text longer than
:data:`MAX_TEXT` characters is not tried against patterns (aliases still are).
RE2 releases the GIL, so the dispatcher matches off the loop too.

Where the two dialects read the same pattern differently it is translated to
mean what it means in Python, and so in MaiBot: ``\\w``, ``\\d``, ``\\s`` and their
negations are Unicode classes (RE2's are ASCII, so ``^/天气 (?P<city>\\w+)`` would
not match ``/天气 北京``), ``\\Z`` is ``\\z``, ``\\uXXXX``, ``\\UXXXXXXXX`` and
``\\N{NAME}`` are code points, ``{,n}`` is ``{0,n}``, and ``[`` inside a class is a
literal. What still differs: ``\\b`` and ``\\B`` are ASCII word boundaries,
``\\W`` and ``\\S`` inside a character class are ASCII, and ``$`` does not match
before a final newline.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

import re2

__all__ = [
    "FIX",
    "MAX_PATTERN",
    "MAX_PLUGIN_PROGRAM",
    "MAX_PROGRAM",
    "MAX_TEXT",
    "CommandPattern",
    "CommandPatternError",
    "command_problem",
    "compile_command",
    "to_re2",
]

MAX_PATTERN: Final = 1024
"""Characters of one command pattern."""
MAX_PROGRAM: Final = 16 * 1024
"""RE2 instructions one pattern compiles to (``\\w+`` is about 1,400, ``\\w{12}`` 16,000)."""
MAX_PLUGIN_PROGRAM: Final = 64 * 1024
"""RE2 instructions of all of one plugin's command patterns together (a refused one counts
as :data:`MAX_PROGRAM`), so compiling them costs the host a bounded amount too."""
MAX_TEXT: Final = 4096
"""Characters of a message tried against patterns; a longer one triggers aliases only."""

FIX: Final = (
    "the host matches command patterns with RE2 (linear time: no backreferences, "
    "lookaround, atomic groups or possessive quantifiers); rewrite the pattern without "
    "them, or give the command aliases"
)
"""What a plugin author does about a refused pattern."""

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is reported by us, not on stderr
_OPTIONS.max_mem = 512 << 10  # program and DFA cache; compiling stops past ~33,000 instructions

_WORD = r"\p{L}\p{N}_"
_DIGIT = r"\p{Nd}"
_SPACE = (
    r"\t\n\x0b\x0c\r\x1c-\x20\x85\xa0\x{1680}\x{2000}-\x{200a}"
    r"\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"
)
"""Python's ``\\s`` on ``str``: every character ``str.isspace`` accepts."""
_OUTSIDE: Final = {
    "w": f"[{_WORD}]",
    "W": f"[^{_WORD}]",
    "d": _DIGIT,
    "D": r"\P{Nd}",
    "s": f"[{_SPACE}]",
    "S": f"[^{_SPACE}]",
    "Z": r"\z",
}
_INSIDE: Final = {"w": _WORD, "d": _DIGIT, "D": r"\P{Nd}", "s": _SPACE}
_CODE_POINT = re.compile(r"u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|N\{([^}]*)\}")
_UP_TO = re.compile(r"\{,(\d+)\}")


class CommandPatternError(ValueError):
    """A command pattern the host refuses: RE2 cannot compile it, or it is over a bound."""

    def __init__(self, reason: str, *, too_large: bool = False) -> None:
        super().__init__(reason)
        self.too_large = too_large


@dataclass(frozen=True, slots=True)
class CommandPattern:
    """One command's pattern, compiled for RE2."""

    source: str
    program: int
    _regexp: Any

    def search(self, text: str) -> dict[str, Any] | None:
        """The named groups of the first match in ``text``, or None (also for too long text)."""
        if len(text) > MAX_TEXT:
            return None
        found = self._regexp.search(text)
        return None if found is None else dict(found.groupdict())


def compile_command(pattern: str) -> CommandPattern:
    """Compile a command's pattern (Python syntax) for RE2.

    Raises:
        CommandPatternError: RE2 cannot compile it, or it is over a bound.
    """
    if len(pattern) > MAX_PATTERN:
        raise CommandPatternError(
            f"it is {len(pattern):,} characters long, over the limit of {MAX_PATTERN:,}"
        )
    try:
        regexp = re2.compile(to_re2(pattern), options=_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        if "too large" in str(reason):
            raise _too_large(None) from None
        raise CommandPatternError(f"RE2 cannot match it ({reason})") from None
    program = int(regexp.programsize)
    if program > MAX_PROGRAM:
        raise _too_large(program)
    return CommandPattern(pattern, program, regexp)


def _too_large(program: int | None) -> CommandPatternError:
    size = "far more" if program is None else f"{program:,}"
    return CommandPatternError(
        f"it compiles to {size} RE2 instructions, over the limit of {MAX_PROGRAM:,} "
        "(\\w, \\d and \\s match every script: a counted repetition of one costs about "
        "1,300 each)",
        too_large=True,
    )


def command_problem(components: Iterable[Any]) -> str | None:
    """Why the host refuses a plugin's command patterns as a whole, or None.

    ``components`` is the plugin's component list as its runner reported it.
    Compiling stops as soon as the total passes :data:`MAX_PLUGIN_PROGRAM`.
    """
    total = 0
    for item in components:
        if not isinstance(item, dict) or str(item.get("type", "")).upper() != "COMMAND":
            continue
        metadata = item.get("metadata")
        pattern = metadata.get("command_pattern") if isinstance(metadata, dict) else None
        if not isinstance(pattern, str) or not pattern:
            continue
        try:
            total += compile_command(pattern).program
        except CommandPatternError as exc:
            total += MAX_PROGRAM if exc.too_large else 0
        if total > MAX_PLUGIN_PROGRAM:
            return (
                f"its command patterns compile to more than {MAX_PLUGIN_PROGRAM:,} RE2 "
                "instructions together, the limit per plugin; simplify them (\\w, \\d and "
                "\\s match every script and cost about 1,300 each), or use aliases"
            )
    return None


def to_re2(pattern: str) -> str:
    """``pattern`` (Python's ``re`` syntax) rewritten to mean the same to RE2."""
    out: list[str] = []
    i, end, in_class = 0, len(pattern), False
    while i < end:
        char = pattern[i]
        if char == "\\" and i + 1 < end:
            piece, i = _escape(pattern, i, in_class)
            out.append(piece)
        elif in_class:
            in_class = char != "]"
            out.append("\\[" if char == "[" else char)
            i += 1
        elif char == "[":
            in_class, i = True, i + 1
            out.append("[")
            if pattern.startswith("^", i):
                out.append("^")
                i += 1
            if pattern.startswith("]", i):  # a "]" first in a class is a literal in Python
                out.append("\\]")
                i += 1
        elif char == "{" and (up_to := _UP_TO.match(pattern, i)) is not None:
            out.append(f"{{0,{up_to.group(1)}}}")
            i = up_to.end()
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _escape(pattern: str, i: int, in_class: bool) -> tuple[str, int]:
    """The RE2 form of the escape at ``pattern[i]`` (a backslash), and where the next starts."""
    letter = pattern[i + 1]
    table = _INSIDE if in_class else _OUTSIDE
    if letter in table:
        return table[letter], i + 2
    point = _CODE_POINT.match(pattern, i + 1)
    if point is not None:
        four, eight, name = point.groups()
        if name is None:
            code = int(four or eight, 16)
        else:
            try:
                code = ord(unicodedata.lookup(name))
            except KeyError:
                raise CommandPatternError(f"it names an unknown character \\N{{{name}}}") from None
        return f"\\x{{{code:x}}}", point.end()
    return pattern[i : i + 2], i + 2
