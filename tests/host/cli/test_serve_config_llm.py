"""``[host.llm]`` in the serve configuration chooses the plugin that answers ``llm.*``."""

from __future__ import annotations

from pathlib import Path

import pytest

from plughost.cli.serve_config import ConfigFileError, ServeConfig


def test_the_llm_table_names_the_provider_and_per_model_choices(tmp_path: Path) -> None:
    file = tmp_path / "plughost.toml"
    file.write_text(
        '[host.llm]\nprovider = "community.echo-llm"\n'
        'models = { "gpt-vision" = "vendor.vision:openai" }\n'
    )

    llm = ServeConfig.load(file).host.llm

    assert llm.provider == "community.echo-llm"
    assert llm.models == {"gpt-vision": "vendor.vision:openai"}


def test_an_unknown_llm_field_is_named_with_the_file(tmp_path: Path) -> None:
    file = tmp_path / "plughost.toml"
    file.write_text('[host.llm]\nprovidr = "x"\n')

    with pytest.raises(
        ConfigFileError, match=r"plughost\.toml: invalid configuration:\n  host\.llm\.providr"
    ):
        ServeConfig.load(file)
