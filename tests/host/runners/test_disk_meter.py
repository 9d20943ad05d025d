"""The host counts what plugins put on disk: a few files on the event loop, many in a thread."""

from __future__ import annotations

from pathlib import Path

from plughost.runners.disk import CHECK_SECONDS, HERE_ENTRIES, DiskMeter, measure


def _files(folder: Path, count: int, size: int = 10) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        (folder / f"{index}.txt").write_bytes(b"x" * size)


def test_a_few_files_are_counted_on_the_loop_as_a_thread_counts_them(tmp_path: Path) -> None:
    _files(tmp_path / "data", 5)
    _files(tmp_path / "data" / "sub", 3, size=9000)
    meter = DiskMeter([str(tmp_path / "data"), str(tmp_path / "missing")], 1 << 30)

    assert meter.over_limit_here(0.0) == ""
    here = meter.used
    assert here == measure([str(tmp_path / "data")], 1 << 30)
    assert here >= 5 * 4096 + 3 * 9000  # each entry counts a block at least


def test_a_scan_that_meets_more_entries_than_the_loop_may_take_is_left_to_a_thread(
    tmp_path: Path,
) -> None:
    _files(tmp_path / "data", HERE_ENTRIES + 1)
    meter = DiskMeter([str(tmp_path / "data")], 1 << 30)

    assert meter.over_limit_here(0.0) is None
    assert meter.due(0.0)  # nothing was counted: the thread's scan is still due
    assert meter.over_limit(0.0) == ""
    assert meter.used >= (HERE_ENTRIES + 1) * 4096
    assert not meter.due(0.0)


def test_a_quota_passed_is_reported_either_way_and_only_once_a_check_is_due(
    tmp_path: Path,
) -> None:
    _files(tmp_path / "data", 3, size=5000)
    meter = DiskMeter([str(tmp_path / "data")], 10_000)

    assert "disk quota exceeded" in (meter.over_limit_here(0.0) or "")
    assert meter.over_limit_here(CHECK_SECONDS / 2) == ""  # not due yet
    assert "limits.disk_mb" in meter.over_limit(CHECK_SECONDS)
