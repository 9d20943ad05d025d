"""The embedder calls an API whose own parameters share names with ``call_api``'s options.

``name``, ``version`` and ``timeout`` are ``call_api``'s own; an API's
arguments of those names go in the ``args`` mapping (``name`` also works as a
keyword), merged with the keyword arguments.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import TEST_PLUGINS, HostFactory

FIXTURE = TEST_PLUGINS / "maibot" / "timer_board"


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Path:
    """A copy of the fixture, outside the repository."""
    return Path(shutil.copytree(FIXTURE, tmp_path / "plugins" / "timer_board"))


async def test_the_embedder_gives_arguments_named_like_call_apis_options_in_args(
    make_host: HostFactory, plugin_dir: Path
) -> None:
    async with make_host([plugin_dir]) as host:
        keyword = await host.call_api("set_timer", name="面条", args={"timeout": 240})
        mapped = await host.call_api(
            "community.timer-board.set_timer",
            {"name": "咖啡", "timeout": 60, "args": ["美式"], "version": "x"},
            version="2",
            timeout=5.0,
        )
        wrong_version = await host.call_api("set_timer", {"name": "茶", "timeout": 1}, version="1")
        with pytest.raises(TypeError, match="'name' both in args and as a keyword"):
            await host.call_api("set_timer", {"name": "x", "timeout": 1}, name="y")

    assert keyword.success, keyword.error
    assert keyword.result == {"timer": "面条", "seconds": 240, "args": [], "extra": []}
    assert mapped.success, mapped.error
    assert mapped.result == {"timer": "咖啡", "seconds": 60, "args": ["美式"], "extra": ["version"]}
    assert not wrong_version.success
