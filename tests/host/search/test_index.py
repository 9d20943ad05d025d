"""Tests for the incremental BM25 index: small catalogs, Chinese, names, determinism."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from plughost.search.index import SearchIndex
from plughost.search.text import tokenize, tool_tokens
from plughost_sdk.models import ToolSpec


def _index(docs: dict[str, str]) -> SearchIndex:
    index = SearchIndex()
    for key, text in docs.items():
        index.add(key, tokenize(text))
    return index


def _keys(index: SearchIndex, query: str, limit: int = 10) -> list[str]:
    return [hit.key for hit in index.search(tokenize(query), limit).hits]


def test_a_catalog_of_two_finds_the_tool_a_word_names() -> None:
    docs = {"send_email": "send an email message", "play_music": "play a song"}
    okapi = BM25Okapi([tokenize(text) for text in docs.values()])
    assert list(okapi.get_scores(tokenize("email"))) == [0.0, 0.0]  # why not BM25Okapi

    hits = _index(docs).search(tokenize("email"), 5).hits
    assert [hit.key for hit in hits] == ["send_email"]
    assert hits[0].score > 0


def test_a_term_in_exactly_half_the_documents_still_scores_above_zero() -> None:
    docs = {
        "a": "weather forecast",
        "b": "weather radar",
        "c": "stock quote",
        "d": "currency rates",
    }
    okapi = BM25Okapi([tokenize(text) for text in docs.values()])
    assert max(okapi.get_scores(tokenize("weather"))) == 0.0  # why not BM25Okapi

    index = _index(docs)
    assert index.idf("weather") > 0
    assert _keys(index, "weather") == ["a", "b"]


def test_a_term_in_every_document_still_ranks_them() -> None:
    index = _index({"a": "tool one", "b": "tool two"})
    hits = index.search(tokenize("tool"), 5).hits
    assert len(hits) == 2
    assert all(hit.score > 0 for hit in hits)


def test_a_chinese_query_finds_a_tool_described_with_a_shorter_word() -> None:
    index = SearchIndex()
    weather = ToolSpec(name="query_weather", description="查询指定城市的实时天气")
    stocks = ToolSpec(name="stock_quote", description="查询股票行情")
    for spec in (weather, stocks):
        index.add(spec.name, tool_tokens(spec))
    assert _keys(index, "查询天气预报")[0] == "query_weather"


@pytest.mark.parametrize("query", ["weather forecast", "get weather", "getWeatherForecast"])
def test_camel_case_and_snake_case_names_are_found_by_their_words(query: str) -> None:
    index = SearchIndex()
    index.add("getWeatherForecast", tool_tokens(ToolSpec(name="getWeatherForecast")))
    index.add("send_mail", tool_tokens(ToolSpec(name="send_mail")))
    index.add("list-weather-stations", tool_tokens(ToolSpec(name="list-weather-stations")))
    assert _keys(index, query)[0] == "getWeatherForecast"


def test_an_exact_tool_name_ranks_that_tool_first() -> None:
    index = SearchIndex()
    for name in ("get_weather", "get_weather_alerts", "weather_get"):
        index.add(name, tool_tokens(ToolSpec(name=name, description="weather data")))
    assert _keys(index, "get_weather")[0] == "get_weather"


def test_ties_are_broken_by_key_whatever_the_insertion_order() -> None:
    forward = SearchIndex()
    backward = SearchIndex()
    keys = ["delta", "alpha", "charlie", "bravo"]
    for key in keys:
        forward.add(key, ["same", "words"])
    for key in reversed(keys):
        backward.add(key, ["same", "words"])
    expected = ["alpha", "bravo", "charlie", "delta"]
    assert [h.key for h in forward.search(["same"], 10).hits] == expected
    assert [h.key for h in backward.search(["same"], 10).hits] == expected


def test_documents_sharing_no_word_with_the_query_are_not_returned() -> None:
    index = _index({"a": "weather", "b": "music"})
    result = index.search(tokenize("calendar"), 5)
    assert result.hits == ()
    assert result.total == 0


def test_total_counts_every_match_beyond_the_limit() -> None:
    index = _index({f"tool{i}": "shared word" for i in range(7)})
    result = index.search(["share"], 3)
    assert len(result.hits) == 3
    assert result.total == 7


def test_within_restricts_results_to_the_given_keys() -> None:
    index = _index({"a": "weather", "b": "weather", "c": "weather"})
    result = index.search(["weather"], 5, within={"b", "c"})
    assert [hit.key for hit in result.hits] == ["b", "c"]
    assert result.total == 2


def test_replacing_a_document_forgets_its_old_words() -> None:
    index = _index({"a": "weather", "b": "music"})
    index.add("a", tokenize("calendar"))
    assert _keys(index, "weather") == []
    assert _keys(index, "calendar") == ["a"]
    assert len(index) == 2


def test_removing_a_document_updates_document_frequencies() -> None:
    index = _index({"a": "weather", "b": "weather", "c": "music"})
    before = index.idf("weather")
    assert index.remove("b") is True
    assert index.remove("b") is False
    assert "b" not in index
    assert index.idf("weather") > before


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="k1"):
        SearchIndex(b=1.5)


_words = st.sampled_from(["alpha", "beta", "gamma", "delta", "eps", "zeta"])
_docs = st.dictionaries(st.sampled_from("abcdefgh"), st.lists(_words, max_size=6), max_size=8)


@given(first=_docs, second=_docs, query=st.lists(_words, min_size=1, max_size=3))
def test_incremental_updates_score_like_a_fresh_build(
    first: dict[str, list[str]], second: dict[str, list[str]], query: list[str]
) -> None:
    updated = SearchIndex()
    for key, tokens in first.items():
        updated.add(key, tokens)
    for key in first:
        if key not in second:
            updated.remove(key)
    for key, tokens in second.items():
        updated.add(key, tokens)
    fresh = SearchIndex()
    for key, tokens in second.items():
        fresh.add(key, tokens)

    got = updated.search(query, 10)
    want = fresh.search(query, 10)
    assert [h.key for h in got.hits] == [h.key for h in want.hits]
    for a, b in zip(got.hits, want.hits, strict=True):
        assert math.isclose(a.score, b.score, rel_tol=1e-9)
    assert got.total == want.total
