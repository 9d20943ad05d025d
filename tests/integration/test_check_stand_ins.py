"""``plughost check`` answers what the embedding application provides, and says so.

A MaiBot plugin that reads the bot's configuration in ``on_load`` passes check
with a marked stand-in (or the operator's ``--answers``), and the report lists
the capability. Differential: the stand-in's answer reaches the plugin as the
real maibot-plugin-sdk reads it (the default the plugin passed to
``config.get``), under plughost as under the real SDK.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import maibot_sdk.context as real_context
import pytest

from plughost.cli.checker import check_plugins
from plughost.cli.stand_ins import STAND_IN_MARK, StandIns
from plughost.host import PluginHost
from plughost.plugins.source import scan_plugin_dirs
from plughost.runners.capabilities import CapabilityCall
from tests.conftest import TEST_PLUGINS, fast_settings
from tests.maibot_real import import_plugin

FIXTURE = TEST_PLUGINS / "maibot" / "welcome_banner"
PLUGIN_ID = "community.welcome-banner"


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Path:
    """A copy of the fixture, outside the repository."""
    return Path(shutil.copytree(FIXTURE, tmp_path / "plugins" / "welcome_banner"))


async def test_a_plugin_reading_the_bots_configuration_in_on_load_passes_with_a_stand_in(
    plugin_dir: Path,
) -> None:
    report = await check_plugins([plugin_dir])

    assert report.ok, [p.describe() for p in report.problems]
    assert report.plugins_ok == [PLUGIN_ID]
    assert report.stood_in == {PLUGIN_ID: {"config.get": "stand-in"}}  # send.text was not called
    assert report.to_dict()["stood_in"] == {PLUGIN_ID: {"config.get": "stand-in"}}


async def test_the_operators_answers_are_what_the_plugin_gets(plugin_dir: Path) -> None:
    wrong = {"config.get": {"success": True, "value": 42}}  # on_load refuses a non-text nickname
    right = {"config.get": {"success": True, "value": "小麦"}}

    refused = await check_plugins([plugin_dir], answers=wrong)
    accepted = await check_plugins([plugin_dir], answers=right)

    assert [p.message for p in refused.errors] == [
        "on_load raised TypeError: bot.nickname should be text, got 42"
    ]
    assert accepted.ok and accepted.stood_in == {PLUGIN_ID: {"config.get": "answers"}}


async def _under_real_sdk(folder: Path, stand_ins: StandIns) -> str:
    """The banner of the plugin under the real SDK, its calls answered by ``stand_ins``."""

    async def rpc_call(method: str, plugin_id: str = "", payload: Any = None, **_: Any) -> Any:
        call = CapabilityCall(PLUGIN_ID, payload["capability"], dict(payload["args"]))
        return await stand_ins._answer(call)

    plugin = import_plugin(folder, "real_welcome_banner").create_plugin()
    assert type(plugin).__mro__[1].__module__ == "maibot_sdk.plugin"
    plugin._set_context(real_context.PluginContext(PLUGIN_ID, rpc_call))
    await plugin.on_load()
    return str((await plugin.welcome())["content"])


async def test_a_stand_in_answer_reads_as_the_default_under_plughost_and_the_real_sdk(
    plugin_dir: Path, tmp_path: Path
) -> None:
    real = await _under_real_sdk(Path(shutil.copytree(FIXTURE, tmp_path / "real")), StandIns())
    host = PluginHost([plugin_dir], settings=fast_settings(tmp_path))
    StandIns().install(host, scan_plugin_dirs([plugin_dir])[0])
    try:
        await host.start()
        ours = await host.invoke("welcome")
    finally:
        await host.aclose()

    assert ours.success, ours.error_message
    assert ours.content == real == "欢迎来到 qq，我是 麦麦"


async def test_a_stand_in_is_marked_and_never_hides_the_hosts_own_answers(tmp_path: Path) -> None:
    host = PluginHost([FIXTURE], settings=fast_settings(tmp_path))
    own = host.capabilities.handler("api.call")
    assert own is not None and host.capabilities.handler("config.get") is None
    stand_ins = StandIns()
    stand_ins.install(host, scan_plugin_dirs([FIXTURE])[0])
    answer = await stand_ins._answer(CapabilityCall("p", "config.get", {"key": "k"}))

    assert host.capabilities.handler("api.call") is own
    assert host.capabilities.handler("config.get") is not None
    assert answer == {"success": True, "value": None, "stand_in": STAND_IN_MARK}


def test_check_prints_what_it_answered_and_takes_an_answers_file(
    plugin_dir: Path, tmp_path: Path
) -> None:
    answers = tmp_path / "answers.toml"
    answers.write_text('"config.get" = { success = true, value = "小麦" }\n', encoding="utf-8")
    command = [sys.executable, "-m", "plughost", "check", str(plugin_dir)]

    plain = subprocess.run(command, capture_output=True, text=True, timeout=90, check=False)
    given = subprocess.run(
        [*command, "--answers", str(answers), "--json"],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )

    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "config.get (stand-in)" in " ".join(plain.stdout.split())
    assert given.returncode == 0, given.stdout + given.stderr
    assert json.loads(given.stdout)["stood_in"] == {PLUGIN_ID: {"config.get": "answers"}}
