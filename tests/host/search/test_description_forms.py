"""What a plughost tool's generated parameter list costs and gives tool search.

A plughost plugin's model reads the brief description, then the detailed one
with a ``Parameter details:`` list generated from the schema. On the labeled
evaluation set (tests/search_eval/), that form is compared with the brief
description alone (what MaiBot's host sends): the list makes the text the
model reads more than twice as long, and moves BM25 recall@5 by less than
0.02 (it repeats what the parameter schema, indexed anyway, already says).
Figures when this was decided (run with ``-s``): recall@5 0.934 with the list,
0.940 without; 132 and 50 characters per tool.
"""

from __future__ import annotations

import asyncio

import pytest

from plughost_sdk.declarations import generate_parameter_details
from plughost_sdk.models import ToolSpec
from tests.host.search.test_quality import K, Ranked, _bm25, _rank_all, _recall
from tests.search_eval.dataset import load_queries, load_tools


def _with_parameter_details(spec: ToolSpec) -> ToolSpec:
    details = generate_parameter_details(spec.parameters_schema)
    text = f"{spec.description}\n\n{details}" if details else spec.description
    return spec.model_copy(update={"description": text})


@pytest.fixture(scope="module")
def forms() -> dict[str, tuple[list[ToolSpec], list[Ranked]]]:
    brief = load_tools()
    detailed = [_with_parameter_details(spec) for spec in brief]
    queries = load_queries()
    found = {
        label: (specs, asyncio.run(_rank_all(specs, queries)))
        for label, specs in (("brief", brief), ("with parameter details", detailed))
    }
    for label, (specs, ranked) in found.items():
        chars = sum(len(spec.description) for spec in specs) / len(specs)
        print(f"\n{label:24} recall@5 {_recall(ranked, K, _bm25):.3f}  chars/tool {chars:.0f}")
    return found


def test_the_parameter_list_moves_search_recall_by_less_than_two_points(
    forms: dict[str, tuple[list[ToolSpec], list[Ranked]]],
) -> None:
    brief = _recall(forms["brief"][1], K, _bm25)
    detailed = _recall(forms["with parameter details"][1], K, _bm25)

    assert abs(detailed - brief) < 0.02


def test_the_parameter_list_more_than_doubles_the_text_the_model_reads(
    forms: dict[str, tuple[list[ToolSpec], list[Ranked]]],
) -> None:
    brief = sum(len(spec.description) for spec in forms["brief"][0])
    detailed = sum(len(spec.description) for spec in forms["with parameter details"][0])

    assert detailed > 2 * brief
