"""A MaiBot plugin's config.toml: generated from its model, completed, rebuilt when older."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from plughost_runner.maibot.config import plan_config
from plughost_sdk.maibot import Field, MaiBotPlugin, PluginConfigBase


class PluginSection(PluginConfigBase):
    """插件信息"""

    config_version: str = Field(default="1.1.0", description="配置版本")


class ApiSection(PluginConfigBase):
    """接口设置"""

    api_key: str = Field(default="", description="接口密钥")
    retries: int = Field(default=2, ge=0, description="失败重试次数")
    hosts: list[str] = Field(default_factory=lambda: ["a.example"], description="服务器")


class Config(PluginConfigBase):
    plugin: PluginSection = Field(default_factory=PluginSection)
    api: ApiSection = Field(default_factory=ApiSection)


class TypedPlugin(MaiBotPlugin):
    config_model = Config


def test_without_a_file_the_config_is_the_models_defaults_and_a_file_is_planned(
    tmp_path: Path,
) -> None:
    plan = plan_config(TypedPlugin(), tmp_path, {})

    assert plan.config == Config().model_dump()
    assert plan.file_text is not None
    assert tomllib.loads(plan.file_text) == Config().model_dump()
    lines = plan.file_text.splitlines()
    assert lines[lines.index("retries = 2") - 1] == "# 失败重试次数"
    assert "# 接口设置" in lines


def test_an_older_file_gains_the_new_fields_and_keeps_values_and_comments(
    tmp_path: Path,
) -> None:
    text = '[plugin]\nconfig_version = "1.1.0"\n\n[api]\n# my production key\napi_key = "k-1"\n'
    (tmp_path / "config.toml").write_text(text, encoding="utf-8")

    plan = plan_config(TypedPlugin(), tmp_path, tomllib.loads(text))

    assert plan.file_text is not None
    assert "# my production key" in plan.file_text
    written = tomllib.loads(plan.file_text)
    assert written["api"] == {"api_key": "k-1", "retries": 2, "hosts": ["a.example"]}
    assert plan.config["api"]["api_key"] == "k-1"


def test_a_complete_file_is_left_alone(tmp_path: Path) -> None:
    text = (
        '[plugin]\nconfig_version = "1.1.0"\n\n[api]\napi_key = "k"\nretries = 5\n'
        'hosts = ["b.example"]\n'
    )
    (tmp_path / "config.toml").write_text(text, encoding="utf-8")

    plan = plan_config(TypedPlugin(), tmp_path, tomllib.loads(text))

    assert plan.file_text is None
    assert plan.config["api"]["retries"] == 5


def test_a_file_of_an_older_config_version_is_rebuilt_on_the_models_layout(
    tmp_path: Path,
) -> None:
    text = '[plugin]\nconfig_version = "1.0.0"\n\n[api]\napi_key = "k"\nretries = "x"\nold = 1\n'
    (tmp_path / "config.toml").write_text(text, encoding="utf-8")

    plan = plan_config(TypedPlugin(), tmp_path, tomllib.loads(text))

    assert plan.reason == "rebuilt for a newer model"
    assert plan.file_text is not None
    # Kept: the key; dropped: a field the model no longer has; reset: a value of the wrong type.
    assert tomllib.loads(plan.file_text)["api"] == {
        "api_key": "k",
        "retries": 2,
        "hosts": ["a.example"],
    }
    assert plan.config["plugin"]["config_version"] == "1.1.0"


def test_an_invalid_value_is_refused(tmp_path: Path) -> None:
    text = '[plugin]\nconfig_version = "1.1.0"\n\n[api]\nretries = -1\n'
    (tmp_path / "config.toml").write_text(text, encoding="utf-8")

    with pytest.raises(ValueError, match="retries"):
        plan_config(TypedPlugin(), tmp_path, tomllib.loads(text))


def test_a_plugin_without_a_model_keeps_its_raw_configuration(tmp_path: Path) -> None:
    class Untyped(MaiBotPlugin):
        pass

    plan = plan_config(Untyped(), tmp_path, {"anything": {"goes": 1}})

    assert plan.config == {"anything": {"goes": 1}}
    assert plan.file_text is None
