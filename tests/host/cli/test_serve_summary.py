"""The line serve prints once its plugins are up says whether it watches for edits."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from plughost.cli.serve import _print_summary
from plughost.settings import HostSettings


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
