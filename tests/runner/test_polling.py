"""The remote runner's polling watch: what it reports, and when."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from plughost_runner.remote.polling import Poller


async def test_an_edit_right_after_start_is_reported(tmp_path: Path) -> None:
    source = tmp_path / "plugin" / "plugin.py"
    source.parent.mkdir()
    source.write_text("1.0.0")
    poller = Poller(tmp_path, 0.05)
    await poller.start()
    source.write_text("1.1.0")  # same size; the first look was taken before
    os.utime(source, ns=(0, 1))  # surely not the first look's, whatever the clock's grain
    batches = poller.batches()
    async with asyncio.timeout(10):
        assert await anext(batches) == {str(source)}


async def test_added_and_removed_files_are_reported(tmp_path: Path) -> None:
    kept = tmp_path / "kept" / "plugin.py"
    kept.parent.mkdir()
    kept.write_text("x")
    poller = Poller(tmp_path, 0.05)
    await poller.start()
    batches = poller.batches()
    added = tmp_path / "added" / "plugin.py"
    added.parent.mkdir()
    added.write_text("x")
    async with asyncio.timeout(10):
        assert await anext(batches) == {str(added)}
    kept.unlink()
    async with asyncio.timeout(10):
        assert await anext(batches) == {str(kept)}
