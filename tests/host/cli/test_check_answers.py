"""``plughost check --answers``: errors name the file and say what to write; config.toml's fix."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from plughost.cli.checker import check_plugins
from plughost.cli.stand_ins import STAND_IN_MARK, StandIns, load_answers
from plughost.host import PluginHost
from plughost.plugins.source import scan_plugin_dirs
from plughost.runners.capabilities import CapabilityCall
from plughost.settings import HostSettings
from tests.conftest import TEST_PLUGINS


def test_an_answers_file_maps_quoted_capability_names_to_answers(tmp_path: Path) -> None:
    path = tmp_path / "answers.toml"
    path.write_text('"config.get" = { success = true, value = "麦麦" }\n"send.*" = true\n')

    assert load_answers(path) == {"config.get": {"success": True, "value": "麦麦"}, "send.*": True}


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("config.get = 1\n", "'config' is not a capability name such as 'config.get'"),
        ('"logger" = 1\n', "'logger' is not a capability name"),
        ('"config.get" = \n', "invalid TOML"),
    ],
)
def test_a_bad_answers_file_is_refused_naming_it_and_the_fix(
    tmp_path: Path, text: str, complaint: str
) -> None:
    path = tmp_path / "answers.toml"
    path.write_text(text)

    with pytest.raises(ValueError, match=r"answers\.toml") as caught:
        load_answers(path)

    assert complaint in str(caught.value)
    assert '"config.get" = { success = true' in str(caught.value)


def test_a_missing_answers_file_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"nope\.toml: cannot be read"):
        load_answers(tmp_path / "nope.toml")


async def test_an_unparsable_config_toml_gets_a_fix_naming_config_toml(tmp_path: Path) -> None:
    folder = Path(shutil.copytree(TEST_PLUGINS / "maibot" / "welcome_banner", tmp_path / "w"))
    (folder / "config.toml").write_text("[weather\ncity = 'x'\n")

    report = await check_plugins([folder])

    (problem,) = report.errors
    assert problem.file.endswith("config.toml") and problem.line == 1
    assert "config.toml" in problem.fix and "_manifest.json" not in problem.fix


async def test_a_group_answer_answers_each_capability_of_the_group_even_over_a_host_default() -> (
    None
):
    stand_ins = StandIns({"send.*": {"success": True}, "llm.generate": {"response": "好"}})
    host = PluginHost([], settings=HostSettings())
    stand_ins.install(host, [])

    sent = await stand_ins._answer(CapabilityCall("p", "send.text", {"text": "hi"}))
    asked = await host.capabilities.handler("llm.generate")(  # type: ignore[misc]
        CapabilityCall("p", "llm.generate", {"prompt": "?"})
    )

    assert (sent, asked) == ({"success": True}, {"response": "好"})
    assert stand_ins.used == {"p": {"send.text": "answers", "llm.generate": "answers"}}


async def test_send_and_llm_get_stand_ins_where_the_host_finds_no_gateway_or_model(
    tmp_path: Path,
) -> None:
    plugin = shutil.copytree(TEST_PLUGINS / "maibot" / "welcome_banner", tmp_path / "banner")
    manifest = plugin / "_manifest.json"
    manifest.write_text(manifest.read_text().replace('"send.text"', '"send.text", "llm.generate"'))
    host = PluginHost([plugin], settings=HostSettings())
    stand_ins = StandIns()
    stand_ins.install(host, scan_plugin_dirs([plugin])[0])

    answers = [
        await host.capabilities.handler(name)(CapabilityCall("p", name, args))  # type: ignore[misc]
        for name, args in [
            ("send.text", {"text": "hi", "stream_id": "qq:1"}),
            ("llm.generate", {"prompt": "?"}),
        ]
    ]

    assert [a.get("stand_in") for a in answers] == [STAND_IN_MARK, STAND_IN_MARK]
    assert stand_ins.used == {"p": {"send.text": "stand-in", "llm.generate": "stand-in"}}
