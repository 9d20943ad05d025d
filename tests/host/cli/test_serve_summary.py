"""What serve prints once its plugins are up: every folder, the counts, whether it watches."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from plughost.cli.console import stderr
from plughost.cli.serve import _print_summary
from plughost.host import PluginHost
from plughost.settings import HostSettings
from tests.conftest import EXAMPLES


def _host() -> Any:
    return SimpleNamespace(status=list, sandbox=None, settings=HostSettings())


@pytest.mark.parametrize(
    ("watching", "said"),
    [(True, "Watching for changes"), (False, "Not watching for changes (--no-watch)")],
)
def test_the_summary_says_whether_serve_watches_for_edits(
    capsys: pytest.CaptureFixture[str], watching: bool, said: str
) -> None:
    _print_summary(_host(), "text", watching=watching)

    assert said in capsys.readouterr().err.replace("\n", " ")


async def test_folders_refused_a_duplicate_id_are_rows_of_the_table_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plugins = tmp_path / "plugins"
    for folder in ("first", "second"):
        shutil.copytree(EXAMPLES / "unit_converter", plugins / folder)
    shutil.copytree(EXAMPLES / "notifier", plugins / "notifier")
    settings = HostSettings(data_dir=tmp_path / "data", temp_dir=tmp_path / "temp")

    async with PluginHost([plugins], settings=settings) as host:
        width = stderr.size
        stderr.size = (400, 50)  # the test's long paths on one line each
        try:
            _print_summary(host, "text", watching=False)
        finally:
            stderr.size = width

    printed = capsys.readouterr().err
    assert "1 plugin(s) loaded, 2 failed" in printed
    for folder in ("first", "second"):
        assert str(plugins / folder) in printed
