"""Load the tool-search evaluation set, and the substring scorer it is compared with.

Files:

- ``tools_en.json`` and ``tools_zh.json``: tools as plugins would declare them
  (``plugin``, ``name``, ``description``, ``params`` as
  ``[name, type, description]``), English and Chinese descriptions;
- ``queries.json``: one query per line with ``lang`` (``en``, ``zh`` or
  ``mixed``), ``style`` and ``expected``, every tool that would satisfy it.

``style`` tells two kinds of query apart: ``chat`` is what a person says in a
chat ("will it rain in Seattle this weekend", "把他踢出去"); ``search`` is what
goes into a search box, and what the ``tool_search`` description asks the
model for ("hay fever pollen forecast", "全员禁言").

The substring scorer is the one MaiBot's ``tool_search`` uses, kept here as the
baseline: exact name 1000, name prefix 300, name contains 200, description
contains 100, then per query term (split on spaces, ``_`` and ``-``) 25 if the
name contains it and 10 if the description does.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plughost_sdk.models import ToolSpec

HERE = Path(__file__).resolve().parent
_TERM_SEPARATORS = re.compile(r"[\s_\-]+")


@dataclass(frozen=True, slots=True)
class EvalQuery:
    """One labeled query."""

    query: str
    lang: str
    style: str
    expected: frozenset[str]


def load_tools() -> list[ToolSpec]:
    """Every evaluation tool as a deferred ToolSpec carrying its plugin id."""
    raw: list[dict[str, Any]] = []
    for name in ("tools_en.json", "tools_zh.json"):
        raw.extend(json.loads((HERE / name).read_text(encoding="utf-8")))
    return [_spec(item) for item in raw]


def load_queries() -> list[EvalQuery]:
    """Every labeled query, in file order."""
    items = json.loads((HERE / "queries.json").read_text(encoding="utf-8"))
    return [
        EvalQuery(item["query"], item["lang"], item["style"], frozenset(item["expected"]))
        for item in items
    ]


def is_development(query: EvalQuery) -> bool:
    """Whether ``query`` is in the development half (tuning) rather than the test half.

    The halves are fixed by a digest of the query's text, so adding queries
    never moves an old one from one half to the other.
    """
    return hashlib.blake2b(query.query.encode("utf-8"), digest_size=1).digest()[0] % 2 == 0


def substring_rank(specs: Sequence[ToolSpec], query: str, limit: int) -> list[str]:
    """Rank tools with MaiBot's substring scorer; tools scoring 0 are left out."""
    lowered = query.lower().strip()
    terms = [term for term in _TERM_SEPARATORS.split(lowered) if term]
    scored: list[tuple[int, str]] = []
    for spec in specs:
        name, description = spec.name.lower(), spec.description.lower()
        score = 0
        if name == lowered:
            score += 1000
        if name.startswith(lowered):
            score += 300
        if lowered in name:
            score += 200
        if lowered in description:
            score += 100
        score += sum(25 for term in terms if term in name)
        score += sum(10 for term in terms if term in description)
        if score > 0:
            scored.append((-score, spec.name))
    return [name for _, name in sorted(scored)[:limit]]


def _spec(item: dict[str, Any]) -> ToolSpec:
    properties = {
        name: {"type": kind, "description": description}
        for name, kind, description in item["params"]
    }
    return ToolSpec(
        name=item["name"],
        description=item["description"],
        parameters_schema={"type": "object", "properties": properties},
        metadata={"plugin_id": item["plugin"], "visibility": "deferred"},
        tool_id=f"plugin:{item['plugin']}:{item['name']}",
        provider_name="plugins",
        provider_type="plugin",
    )
