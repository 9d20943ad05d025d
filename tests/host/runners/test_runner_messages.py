"""What the host believes of a runner's progress events: finite numbers and a bounded message."""

from __future__ import annotations

from typing import Any

import pytest

from plughost.runners.output import MAX_LINE
from plughost.runners.runner_messages import _report_progress
from plughost.tools import progress


def received(body: dict[str, Any]) -> list[progress.Progress]:
    got: list[progress.Progress] = []
    with progress.reporting(got.append):
        _report_progress(body)
    return got


def test_a_well_formed_event_is_passed_on() -> None:
    assert received({"progress": 2, "total": 4.0, "message": "half"}) == [
        progress.Progress(2.0, 4.0, "half")
    ]


@pytest.mark.parametrize(
    "body",
    [
        {"progress": float("nan")},
        {"progress": float("inf"), "total": 1},
        {"progress": 1, "total": float("-inf")},
        {"progress": "1"},
        {"progress": True},
        {"progress": None},
        {},
        {"progress": 1, "total": "2"},
    ],
)
def test_a_progress_or_total_that_is_no_finite_number_is_dropped(body: dict[str, Any]) -> None:
    assert received(body) == []


def test_a_long_message_is_cut_to_a_log_lines_length() -> None:
    [event] = received({"progress": 1, "message": "x" * (MAX_LINE * 10)})

    assert event.message == "x" * MAX_LINE
