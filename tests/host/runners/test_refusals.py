"""Refused paths a runner reports: a suggestion only, bounded, reported once a minute."""

from __future__ import annotations

import pytest

from plughost.runners import refusals
from plughost.runners.refusals import PathRefusals, write_grant


@pytest.mark.parametrize(
    "reported", ["relative/path", "/srv/x\nplughost: granted everything", 7, None, "/" + "a" * 5000]
)
def test_a_report_that_is_not_an_absolute_printable_path_is_no_grant(reported: object) -> None:
    assert write_grant(reported) is None


def test_a_repeated_refusal_is_counted_but_reported_once_a_minute() -> None:
    seen = PathRefusals()

    first = seen.note("author.x", "/srv/media")
    again = seen.note("author.x", "/srv/media")

    assert (first, again) == (True, False)
    assert seen.counts[("author.x", "/srv/media")] == 2
    assert seen.paths("author.x") == ["/srv/media"] and seen.paths("author.y") == []


def test_endless_distinct_paths_stay_in_bounded_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(refusals, "MAX_PATHS", 8)
    seen = PathRefusals()

    for n in range(50):
        seen.note("author.x", f"/srv/{n}")

    assert len(seen.counts) <= 8 and len(seen._reported) <= 8
