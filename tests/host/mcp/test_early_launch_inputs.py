"""What the early launch's memo is keyed on stays in step with what a launch reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS

from plughost.mcp import early_launch, sandbox


def test_the_memo_key_covers_every_environment_variable_a_launch_reads() -> None:
    read = {*DEFAULT_INHERITED_ENV_VARS, *sandbox._CACHES}

    assert read <= set(early_launch._ENVIRONMENT)


def test_a_working_directory_that_is_gone_starts_nothing_early_and_keeps_no_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "up.toml"
    config.write_text('[host]\ndata_dir = "data/plugins"\n[mcp.servers.a]\ncommand = "cat"\n')
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()  # the key names the working directory, and there is none
    monkeypatch.setattr(early_launch, "_memo", early_launch._Memo())

    early_launch.launch(config, "0")  # "never raises"
    early_launch.remember("a", ["cat"], {}, None)

    assert early_launch._memo.launched == {}
    assert not (tmp_path / "data").exists()  # nothing written under the data folder
