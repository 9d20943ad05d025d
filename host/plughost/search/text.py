"""Turn text and tool specs into search tokens, the same way for tools and queries.

Text is split into runs of CJK characters and runs of other letters and
digits before anything else, so that mixed text such as ``用Spotify播放jazz``
never reaches jieba with Latin words inside it:

- CJK runs go through ``jieba.cut_for_search``, which also emits the short words
  inside long ones (查询天气预报 gives 查询, 天气, 预报 and 天气预报), so a
  query matches a tool that uses only part of a compound word; jieba's HMM
  guesser of unknown words is off, see :func:`_jieba_cut_for_search`; every
  character of the run is a token as well (see :func:`_cjk_tokens`);
- other runs are lower-cased; identifiers are split on ``_``, ``-`` and
  camelCase, keeping the whole identifier as one more token so that an exact
  tool name stays the strongest match; English words lose their inflections
  (Porter's steps 1 and 5a: files → file, creating → create) so a query and a
  description need not agree on number or tense.

Stop words (a small built-in English and Chinese list) and one-letter Latin
tokens are dropped. A single CJK character is kept unless it is a stop word:
in Chinese one character is often a whole word (删, 歌, 图).

jieba is imported on first use and initialised once per process; importing
this module costs nothing. Scoring lives in :mod:`plughost.search.index`.
"""

from __future__ import annotations

import functools
import logging
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from plughost_sdk.models import ToolSpec

__all__ = ["STOP_WORDS", "name_tokens", "tokenize", "tool_tokens"]

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# A CJK run, or a run of other word characters (underscore included) joined by
# single hyphens: "get_weather", "text-to-speech", "iPhone15".
_RUN = re.compile(rf"[{_CJK}]+|[^\W{_CJK}]+(?:-[^\W{_CJK}]+)*")
_CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+\d*|[A-Z]+\d*|\d+")
_IDENTIFIER_SEPARATORS = re.compile(r"[_\-]+")
_MAX_SCHEMA_DEPTH = 3
# The name is counted twice: it is the shortest, most deliberate summary of a
# tool, while a description also carries incidental words.
_NAME_WEIGHT = 2


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_ENGLISH_STOP_WORDS = _words(
    """
    a about above after again all also am an and any are as at be been being but by can
    could did do does doing done during each etc every for from had has have having he
    her here hers him his how i if in into is it its itself just let lets like may me might
    mine more most must my no nor not of on once only onto or our ours own
    please pls same shall she should so some such than that the their theirs them then there
    these they this those through to too until us very via was we were what when
    where which while who whom whose why will with within without would you your yours
    now really actually ok okay hey hi hello thanks thank much many lot lots still
    even yet already ever never something anything thing things
    """
)
_CHINESE_STOP_WORDS = _words(
    """
    的 了 着 过 吗 呢 吧 啊 呀 哦 嘛 啦 么 和 与 及 或 或者 而 且 并 也 都 就 还 又 在 是
    有 没 不 很 太 更 最 这 那 这个 那个 这些 那些 哪 哪个 哪些 什么 怎么 怎样 如何 为什么
    我 你 您 他 她 它 我们 你们 他们 她们 它们 咱们 自己 帮 帮我 帮忙 请 请问 麻烦 一下 一个
    一些 个 把 被 给 让 对 向 从 到 用 以 于 为 可以 能 能够 会 要 想 需要 应该 得 地 之 其
    等 等等 下 啥 嗯 哈 呗 咋 里 中 时 后 前 说 看看 一点 现在 然后 如果 因为 所以
    多少 一 几
    """
)
STOP_WORDS: frozenset[str] = _ENGLISH_STOP_WORDS | _CHINESE_STOP_WORDS
"""Words dropped from documents and queries alike."""

# Words the stemmer must leave alone: their final "s" is not a plural ending.
_UNSTEMMED = _words(
    "news status series species analysis always alias canvas bus gas lens plus basis "
    "access address process class less https ios windows chaos atlas thesis diagnosis "
    "campus virus bonus census focus minus radius corpus"
)
_VOWELS = frozenset("aeiou")


def tokenize(text: str) -> list[str]:
    """Split free text (a description or a query) into search tokens.

    Args:
        text: Any mix of Chinese, English, identifiers and punctuation.

    Returns:
        The tokens in order, stop words and one-letter Latin tokens removed;
        duplicates are kept because term frequency matters to BM25.
    """
    text = unicodedata.normalize("NFKC", text)
    tokens: list[str] = []
    for match in _RUN.finditer(text):
        run = match.group()
        if _is_cjk(run[0]):
            tokens.extend(_cjk_tokens(run))
        else:
            tokens.extend(_word_tokens(run))
    return tokens


def name_tokens(name: str) -> list[str]:
    """Split a tool or parameter name into its words, plus the whole name.

    ``getWeatherForecast`` and ``get_weather_forecast`` both give ``get``,
    ``weather`` and ``forecast``; the whole name, lower-cased, comes last.
    """
    tokens = tokenize(_IDENTIFIER_SEPARATORS.sub(" ", name))
    whole = unicodedata.normalize("NFKC", name).strip("_- ").lower()
    if len(whole) > 1 and whole not in tokens:
        tokens.append(whole)
    return tokens


def tool_tokens(spec: ToolSpec) -> list[str]:
    """Return the search document of a tool.

    The document holds the tool's name, its description, and the name and
    description of every parameter (nested objects and array items included,
    a few levels deep), because users describe a tool by what it acts on as
    often as by what it does.
    """
    tokens = name_tokens(spec.name) * _NAME_WEIGHT
    tokens.extend(tokenize(spec.description))
    for param_name, param_description in _parameters(spec.parameters_schema, 0):
        tokens.extend(name_tokens(param_name))
        tokens.extend(tokenize(param_description))
    return tokens


def _parameters(schema: Mapping[str, Any], depth: int) -> Iterator[tuple[str, str]]:
    if depth >= _MAX_SCHEMA_DEPTH:
        return
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, sub in properties.items():
            if not isinstance(sub, Mapping):
                continue
            description = sub.get("description")
            yield str(name), description if isinstance(description, str) else ""
            yield from _parameters(sub, depth + 1)
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield from _parameters(items, depth + 1)


def _is_cjk(char: str) -> bool:
    return "\u3400" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff"


def _cjk_tokens(run: str) -> list[str]:
    words = [word for word in _jieba_cut_for_search()(run) if word not in STOP_WORDS]
    # Every character of the run is a token too: Chinese words for one thing
    # often share a character but not a segmentation (降雨/下雨, 挂号/挂个号),
    # and BM25's IDF keeps common characters from weighing much. A character
    # jieba already gave as a word of its own is not counted twice.
    singles = {word for word in words if len(word) == 1}
    return words + [char for char in run if char not in STOP_WORDS and char not in singles]


def _word_tokens(run: str) -> list[str]:
    pieces = [piece for piece in _IDENTIFIER_SEPARATORS.split(run) if piece]
    tokens: list[str] = []
    if len(pieces) > 1:
        tokens.append("_".join(pieces).lower() if "_" in run else run.lower())
    for piece in pieces:
        tokens.extend(_piece_tokens(piece))
    return tokens


def _piece_tokens(piece: str) -> list[str]:
    lowered = piece.lower()
    parts = [part.lower() for part in _CAMEL_PART.findall(piece)]
    words = [lowered] if len(parts) <= 1 else [lowered, *parts]
    return [_stem(word) for word in words if len(word) > 1 and word not in STOP_WORDS]


def _stem(word: str) -> str:
    """Reduce an English word to its stem with steps 1 and 5a of Porter's stemmer.

    Only the inflections are removed (plural ``-s``, ``-ed``, ``-ing``, a final
    ``-e``), so *files*, *filing* and *file* meet, and so do *created* and
    *create*; derivational suffixes (*-ation*, *-ness*) stay, which keeps
    distinct words apart.
    """
    if len(word) <= 3 or word in _UNSTEMMED or not word.isascii() or not word.isalpha():
        return word
    return _porter_step5a(_porter_step1(word))


def _porter_step1(word: str) -> str:
    if word.endswith(("sses", "ies")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if word.endswith("eed"):
        return word[:-1] if _measure(word[:-3]) > 0 else word
    for suffix in ("ed", "ing"):
        stem = word[: -len(suffix)]
        if word.endswith(suffix) and _has_vowel(stem):
            return _porter_step1b_tidy(stem)
    if word.endswith("y") and _has_vowel(word[:-1]):
        return word[:-1] + "i"
    return word


def _porter_step1b_tidy(stem: str) -> str:
    if stem.endswith(("at", "bl", "iz")):
        return stem + "e"
    if len(stem) > 1 and stem[-1] == stem[-2] and _consonant(stem, -1) and stem[-1] not in "lsz":
        return stem[:-1]
    if _measure(stem) == 1 and _ends_cvc(stem):
        return stem + "e"
    return stem


def _porter_step5a(word: str) -> str:
    if not word.endswith("e"):
        return word
    stem = word[:-1]
    measure = _measure(stem)
    return stem if measure > 1 or (measure == 1 and not _ends_cvc(stem)) else word


def _consonant(word: str, index: int) -> bool:
    index %= len(word)
    char = word[index]
    if char in _VOWELS:
        return False
    if char == "y":
        return index == 0 or not _consonant(word, index - 1)
    return True


def _measure(stem: str) -> int:
    """Porter's m: how many vowel-consonant sequences the stem has."""
    count, previous_vowel = 0, False
    for index in range(len(stem)):
        vowel = not _consonant(stem, index)
        if previous_vowel and not vowel:
            count += 1
        previous_vowel = vowel
    return count


def _has_vowel(stem: str) -> bool:
    return any(not _consonant(stem, index) for index in range(len(stem)))


def _ends_cvc(stem: str) -> bool:
    return (
        len(stem) >= 3
        and _consonant(stem, -1)
        and not _consonant(stem, -2)
        and _consonant(stem, -3)
        and stem[-1] not in "wxy"
    )


@functools.cache
def _jieba_cut_for_search() -> Callable[[str], Iterable[str]]:
    """Import and initialise jieba once; its dictionary takes about a second to load."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()

    def cut_for_search(text: str) -> Iterable[str]:
        # Without the HMM, a word missing from the dictionary falls apart into
        # characters the same way in a query and in a description, instead of
        # being glued to a neighbour differently each time (我查, 张图).
        words: Iterable[str] = jieba.cut_for_search(text, HMM=False)
        return words

    return cut_for_search
