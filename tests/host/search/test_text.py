"""Tests for the search tokenizer: Chinese, English, identifiers, stop words, stems."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from plughost.search.text import STOP_WORDS, name_tokens, tokenize, tool_tokens
from plughost_sdk.models import ToolSpec


def test_english_is_lower_cased_and_stop_words_are_dropped() -> None:
    assert tokenize("Get THE Weather for a City") == ["get", "weather", "citi"]


def test_one_letter_latin_tokens_are_dropped() -> None:
    assert tokenize("x y 2 go ab") == ["go", "ab"]


def test_a_single_chinese_character_is_kept_unless_it_is_a_stop_word() -> None:
    tokens = tokenize("删 的 歌")
    assert "删" in tokens
    assert "歌" in tokens
    assert "的" not in tokens


def test_cut_for_search_also_yields_the_short_words_inside_long_ones() -> None:
    tokens = tokenize("查询天气预报")
    assert {"查询", "天气", "预报", "天气预报"} <= set(tokens)


def test_characters_of_chinese_words_are_tokens_too() -> None:
    tokens = tokenize("挂号")
    assert tokens.count("挂号") == 1
    assert "挂" in tokens
    assert "号" in tokens


def test_a_character_jieba_already_split_off_is_not_counted_twice() -> None:
    assert tokenize("戳一戳").count("戳") == 2  # two occurrences, not four


def test_mixed_chinese_and_english_are_split_before_segmenting() -> None:
    tokens = tokenize("用Spotify播放jazz")
    assert "spotifi" in tokens
    assert "jazz" in tokens
    assert "播放" in tokens
    assert all(" " not in token and "_" not in token for token in tokens)


def test_full_width_letters_are_read_as_ascii() -> None:
    assert tokenize("ＧＩＴ ｄｉｆｆ") == ["git", "diff"]


def test_name_tokens_split_snake_kebab_and_camel_case_and_keep_the_whole_name() -> None:
    assert name_tokens("get_weather_forecast") == [
        "get",
        "weather",
        "forecast",
        "get_weather_forecast",
    ]
    assert set(name_tokens("getWeatherForecast")) == {
        "getweatherforecast",
        "get",
        "weather",
        "forecast",
    }
    assert name_tokens("send-email")[-1] == "send-email"


def test_an_identifier_in_a_query_yields_the_whole_name_as_a_token() -> None:
    assert "get_weather" in tokenize("call get_weather now")
    assert "getweather" in tokenize("call getWeather now")


def test_camel_case_words_in_prose_also_match_their_lower_case_form() -> None:
    assert "github" in tokenize("open GitHub")
    assert "hub" in tokenize("open GitHub")


def test_stemming_brings_inflections_of_one_word_together() -> None:
    assert tokenize("files")[0] == tokenize("file")[0]
    assert tokenize("created")[0] == tokenize("creating")[0] == tokenize("create")[0]
    assert tokenize("running") == ["run"]
    assert tokenize("searches") == ["search"]


def test_stemming_leaves_news_and_status_alone() -> None:
    assert tokenize("news status") == ["news", "status"]


def test_tool_tokens_cover_name_description_and_nested_parameters() -> None:
    spec = ToolSpec(
        name="book_hotel",
        description="Reserve a room",
        parameters_schema={
            "type": "object",
            "properties": {
                "guest": {
                    "type": "object",
                    "description": "Who stays",
                    "properties": {"passport_number": {"type": "string"}},
                },
                "dates": {"type": "array", "items": {"properties": {"night": {}}}},
            },
        },
    )
    tokens = set(tool_tokens(spec))
    assert {"book_hotel", "reserv", "room", "guest", "stai", "passport", "night"} <= tokens


def test_the_tool_name_weighs_twice_in_its_document() -> None:
    spec = ToolSpec(name="ping_host", description="Check reachability")
    assert tool_tokens(spec).count("ping") == 2


def test_jieba_is_imported_only_when_chinese_text_is_tokenized() -> None:
    script = (
        "import sys\n"
        "from plughost.search.text import tokenize\n"
        "assert 'jieba' not in sys.modules\n"
        "tokenize('english only')\n"
        "assert 'jieba' not in sys.modules\n"
        "tokenize('天气')\n"
        "assert 'jieba' in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr


@given(st.text(max_size=80))
def test_tokens_are_never_stop_words_or_one_latin_letter(text: str) -> None:
    for token in tokenize(text):
        assert token not in STOP_WORDS
        assert len(token) > 1 or not token.isascii()
        assert token == token.lower()
