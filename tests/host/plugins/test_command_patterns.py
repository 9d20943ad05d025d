"""Command patterns: Python's meaning, RE2's linear time, and the bounds."""

from __future__ import annotations

import functools
import re
import statistics
import sys
import time
import unicodedata

import pytest
import re2

from plughost.plugins.command_patterns import (
    MAX_PATTERN,
    MAX_PLUGIN_PROGRAM,
    MAX_TEXT,
    CommandPattern,
    CommandPatternError,
    command_problem,
    compile_command,
    to_re2,
)
from plughost.plugins.component_info import PluginComponent

# Patterns as MaiBot plugins publish them, and messages a bot sees.
PATTERNS = [
    r"^/weather (?P<city>\w+)",
    r"^/weather\s+(?P<city>\w+)$",
    r"^/who (?P<name>\S+)$",
    r"^/roll\s*(?P<sides>\d+)?",
    r"^[/!](?P<cmd>help|帮助)(?:\s+(?P<topic>.+))?$",
    r"^/(?P<verb>set|get)\s+(?P<key>[\w.-]+)(?:\s*=\s*(?P<value>.*))?$",
    r"^(?P<n>\d{1,3})\s*[dD]\s*(?P<m>\d{1,3})$",
    r"^/echo (?P<text>[\s\S]+)$",
    r"(?i)^/PING\b",
    r"^/天气\s*(?P<city>[\u4e00-\u9fa5]+)",
    r"^/search\s+(?P<q>[^\s,]+)(?:,(?P<page>\d+))?\Z",
    r"^/x{,2}y",
    r"^/tag (?P<tags>[\w\s]+)$",
]
TEXTS = [
    "/weather Paris",
    "/weather 北京",
    "/weather\u3000上海",
    "/who 麦麦",
    "/roll 20",
    "/roll",
    "!帮助 配置",
    "/help",
    "/set a.b-c = 12",
    "/get name",
    "3d６",
    "2 D 20",
    "/echo line one\nline two",
    "/ping now",
    "/PING",
    "/天气 广州",
    "/search cats,2",
    "/search cats\n",
    "/xxy",
    "/xxxy",
    "/tag 猫 dog\u00a0bird",
    "hello there",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_published_patterns_match_as_pythons_re_does(pattern: str) -> None:
    python = re.compile(pattern)
    ours = compile_command(pattern)

    for text in TEXTS:
        found = python.search(text)
        expected = None if found is None else found.groupdict()
        assert ours.search(text) == expected, f"{pattern!r} on {text!r}"


@pytest.mark.parametrize(
    "pattern",
    [
        r"\w",
        r"\W",
        r"\d",
        r"\D",
        r"\s",
        r"\S",
        r"[\w]",
        r"[\d]",
        r"[\D]",
        r"[\s]",
        r"[^\w]",
        r"[^\s]",
    ],
)
def test_class_escapes_mean_what_they_mean_in_python_for_every_character(pattern: str) -> None:
    every = _every_character()

    assert re2.compile(to_re2(pattern)).findall(every) == re.findall(pattern, every)


@functools.cache
def _every_character() -> str:
    """Each code point of the BMP, one in 7 above, that both Unicode databases know.

    (Python's database may be older than RE2's: unassigned ones are left out.)
    """
    return "".join(
        chr(c)
        for c in [*range(0x10000), *range(0x10000, sys.maxunicode + 1, 7)]
        if not 0xD800 <= c <= 0xDFFF and unicodedata.category(chr(c)) != "Cn"
    )


def _median_search_seconds(*searches: tuple[CommandPattern, str], times: int) -> list[float]:
    """The median time of each ``(pattern, text)`` search, the searches taken in turns."""
    taken: list[list[float]] = [[] for _ in searches]
    for _ in range(times):
        for spent, (compiled, text) in zip(taken, searches, strict=True):
            started = time.perf_counter()
            compiled.search(text)
            spent.append(time.perf_counter() - started)
    return [statistics.median(spent) for spent in taken]


@pytest.mark.parametrize(
    "pattern",
    [
        r"^(a+)+$",
        r"^(a|a)*$",
        r"^(a|aa)+$",
        r"(.*a){12}",
        r"^(\w+\s?)*$",
        r"^([a-zA-Z0-9])(([\-.]|[_]+)?([a-zA-Z0-9]+))*(@)$",
    ],
)
def test_patterns_that_backtrack_in_python_are_matched_in_linear_time(pattern: str) -> None:
    compiled = compile_command(pattern)
    short, long = "a" * 20 + "!", "a" * (MAX_TEXT - 1) + "!"
    benign, on_short = _median_search_seconds(
        (compile_command(r"^a+$"), short), (compiled, short), times=51
    )
    # Python's re needs a tenth of a second for the first at 20 characters (four times
    # as long per extra "aa"), 100,000 times the benign pattern; RE2 a few times as much.
    assert on_short < 50 * benign, f"{pattern!r}: {on_short * 1e6:.1f} us, ^a+$ {benign * 1e6:.1f}"
    (on_long,) = _median_search_seconds((compiled, long), times=5)
    # Per character, 195 times the text costs about as much (a fallback to RE2's slower
    # automaton measures 11 times); a quadratic engine would cost 195 times as much.
    per_char = {"short": on_short / len(short), "long": on_long / len(long)}
    assert per_char["long"] < 50 * per_char["short"], f"{pattern!r}: {per_char}"


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"^(a)\1$", "invalid escape sequence"),
        (r"^(?P<x>a)(?P=x)$", "invalid perl operator"),
        (r"^/cmd(?=\s)", "invalid perl operator"),
        (r"^/cmd(?!x)", "invalid perl operator"),
        (r"(?<=/)cmd", "invalid perl operator"),
        (r"(?<!x)cmd", "invalid perl operator"),
        (r"^(?>a+)b", "invalid perl operator"),
        (r"^a++b", "bad repetition operator"),
        (r"^(a)?(?(1)b|c)", "invalid perl operator"),
        (r"(?x) a b", "invalid perl operator"),
        (r"\w{40}", "far more RE2 instructions, over the limit of 16,384"),
        (r"\w{13}", "RE2 instructions, over the limit of 16,384"),
        ("a" * (MAX_PATTERN + 1), "characters long"),
    ],
)
def test_patterns_re2_cannot_match_or_over_a_bound_are_refused(pattern: str, why: str) -> None:
    with pytest.raises(CommandPatternError, match=re.escape(why)):
        compile_command(pattern)


def test_a_refused_pattern_never_matches_and_says_why() -> None:
    command = PluginComponent("p.a", "peek", "COMMAND", {"command_pattern": r"^/peek(?=\s)"})

    assert command.compiled is None
    assert "invalid perl operator" in command.pattern_error


def test_text_longer_than_the_bound_is_not_tried_against_patterns() -> None:
    compiled = compile_command(r"^/echo (?P<text>.+)$")

    assert compiled.search("/echo " + "x" * (MAX_TEXT - 6)) is not None
    assert compiled.search("/echo " + "x" * (MAX_TEXT - 5)) is None


def _command(name: str, pattern: str) -> dict[str, object]:
    return {"name": name, "type": "COMMAND", "metadata": {"command_pattern": pattern}}


def test_a_plugins_patterns_are_bounded_together() -> None:
    heavy = r"^/x (?P<a>\w{10})"  # about 13,500 instructions each
    few = [_command(f"c{i}", heavy) for i in range(3)]
    many = [_command(f"c{i}", heavy) for i in range(MAX_PLUGIN_PROGRAM // 13_000 + 1)]

    assert command_problem(few) is None
    problem = command_problem(many)
    assert problem is not None and f"{MAX_PLUGIN_PROGRAM:,}" in problem


def test_refused_patterns_too_large_count_towards_the_plugins_bound() -> None:
    refused = [_command(f"c{i}", r"\w{40}") for i in range(8)]
    invalid = [_command(f"c{i}", r"^(?=x)") for i in range(200)]

    assert command_problem(refused) is not None
    assert command_problem(invalid) is None  # each refused alone, nothing compiled
