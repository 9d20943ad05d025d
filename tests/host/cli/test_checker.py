"""``plughost check``: every problem, with file, line and fix, found with real runners."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from plughost.cli import checker
from plughost.cli.checker import CheckProblem, CheckReport, check_plugins
from plughost.cli.one_shot import throwaway_settings
from plughost.cli.scaffold import scaffold_plugin
from plughost.settings import HostSettings
from tests.conftest import EXAMPLES, TEST_PLUGINS

EXAMPLE_IDS = [
    "plughost.example-chat-guard",
    "plughost.example-greeter",
    "plughost.example-image",
    "plughost.example-notifier",
    "plughost.example-search",
    "plughost.example-units",
]

MANIFEST = {
    "manifest_version": 2,
    "version": "1.0.0",
    "name": "x",
    "author": {"name": "tests"},
    "plughost_sdk": {"min_version": "0.1.0", "max_version": "0.99.99"},
}


def _write_plugin(folder: Path, plugin_py: str, **manifest: object) -> Path:
    folder.mkdir(parents=True)
    data = {**MANIFEST, "id": f"tests.{folder.name}", **manifest}
    (folder / "_manifest.json").write_text(json.dumps(data, indent=2), encoding="utf-8")
    (folder / "plugin.py").write_text(textwrap.dedent(plugin_py), encoding="utf-8")
    return folder


def _only(report: CheckReport, plugin: str) -> list[CheckProblem]:
    return [p for p in report.problems if p.plugin == plugin]


async def test_the_example_plugins_are_all_ok() -> None:
    report = await check_plugins([EXAMPLES])

    assert report.ok, [p.describe() for p in report.errors]
    assert report.plugins_ok == EXAMPLE_IDS
    assert [(p.plugin, p.severity) for p in report.warnings] == [
        ("plughost.example-greeter", "warning")  # its @Action is deprecated, not wrong
    ]


async def test_broken_test_plugins_are_each_reported_with_file_line_and_fix() -> None:
    report = await check_plugins([TEST_PLUGINS])

    assert not report.ok
    errors = {
        (p.plugin, Path(p.file).relative_to(TEST_PLUGINS).as_posix(), p.line) for p in report.errors
    }
    # tests/plugins grows as misbehaving plugins are added: check the known ones.
    assert errors >= {
        ("tests.syntax-error", "syntax_error/plugin.py", 4),
        ("tests.crash-on-import", "crash_on_import/plugin.py", 5),
        ("tests.raise-on-load", "raise_on_load/plugin.py", 8),
        ("bad_manifest", "bad_manifest/_manifest.json", 1),
        ("bad_manifest", "bad_manifest/_manifest.json", 0),
    }
    assert {"tests.echo", "tests.faulty"} <= set(report.plugins_ok)
    assert not {p.plugin for p in report.errors} & set(report.plugins_ok)
    assert all(p.fix for p in report.problems)


async def test_each_manifest_problem_is_its_own_entry_with_its_fix() -> None:
    report = await check_plugins([TEST_PLUGINS / "bad_manifest"])

    assert [(p.message, p.fix, p.line) for p in report.problems] == [
        ("field 'id': 'nodots' is not a plugin id", _id_fix(), 1),
        ("field 'version' is required", "add it", 0),
        ("field 'author' is required", "add it", 0),
    ]


def _id_fix() -> str:
    return "use at least two parts joined by '.' or '-', for example 'author.weather'"


async def test_load_failures_name_the_cause() -> None:
    report = await check_plugins([TEST_PLUGINS / "raise_on_load", TEST_PLUGINS / "syntax_error"])

    messages = {p.plugin: p.message for p in report.errors}
    assert messages == {
        "tests.raise-on-load": "on_load raised ValueError: database unreachable",
        "tests.syntax-error": "syntax error: expected ':'",
    }


async def test_a_plugin_that_kills_its_runner_while_loading_is_reported(tmp_path: Path) -> None:
    folder = _write_plugin(tmp_path / "exiter", "import os\n\nos._exit(9)\n")

    report = await check_plugins([folder])

    assert [(p.plugin, p.message) for p in report.errors] == [
        ("tests.exiter", "the runner died while loading the plugin: exited with code 9")
    ]


@pytest.mark.parametrize(
    ("first", "reason"),
    [("ready", "not ready within 1 s"), ("on_load", "on_load did not finish within 1 s")],
    ids=["ready_deadline_first", "on_load_deadline_first"],
)
async def test_a_plugin_whose_on_load_hangs_is_reported_after_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first: str, reason: str
) -> None:
    """check's timeout is two deadlines, the runner's ready and its on_load: either may fire first.

    Each case moves the other deadline out of reach, so the report is pinned for both.
    """

    def one_deadline(scratch: Path, timeout: float) -> HostSettings:
        settings = throwaway_settings(scratch, timeout)
        later = {"on_load_timeout" if first == "ready" else "ready_timeout": 60.0}
        return settings.model_copy(update={"runner": settings.runner.model_copy(update=later)})

    monkeypatch.setattr(checker, "throwaway_settings", one_deadline)
    folder = _write_plugin(
        tmp_path / "hanger",
        """
        import asyncio

        from plughost_sdk import Plugin


        class Hanger(Plugin):
            async def on_load(self):
                await asyncio.Event().wait()


        def create_plugin():
            return Hanger()
        """,
    )

    report = await check_plugins([folder], timeout=1.0)

    assert len(report.errors) == 1
    assert report.errors[0].message == f"loading did not finish in time: {reason}"
    assert "on_load" in report.errors[0].fix


async def test_a_freshly_scaffolded_plugin_is_ok_without_a_single_warning(tmp_path: Path) -> None:
    folder = scaffold_plugin("weather_bot", tmp_path)

    report = await check_plugins([folder])

    assert report.ok
    assert report.plugins_ok == ["local.weather_bot"]
    assert report.problems == []


async def test_an_invalid_parameters_schema_is_an_error_at_its_tool(tmp_path: Path) -> None:
    _write_plugin(
        tmp_path / "schemas",
        """
        from plughost_sdk import Plugin, Tool


        class Schemas(Plugin):
            @Tool(
                "bad_schema",
                brief_description="A tool whose schema is not JSON Schema",
                parameters={"type": "object", "properties": {"q": {"minLength": -1}}},
            )
            async def bad_schema(self, **kwargs):
                return "x"

            @Tool(
                "ghost_required",
                brief_description="Requires a parameter it does not declare",
                parameters={"type": "object", "properties": {}, "required": ["ghost"]},
            )
            async def ghost_required(self, **kwargs):
                return "x"


        def create_plugin():
            return Schemas()
        """,
    )

    report = await check_plugins([tmp_path])

    assert not report.ok
    assert [(p.line, p.message) for p in report.errors] == [
        (
            6,
            "tool 'bad_schema': parameters_schema is invalid JSON Schema at "
            "properties/q/minLength: -1 is less than the minimum of 0",
        ),
        (14, "tool 'ghost_required': 'required' lists 'ghost', not among its properties"),
    ]


async def test_commands_and_hooks_are_checked_and_listed(tmp_path: Path) -> None:
    _write_plugin(
        tmp_path / "commands",
        """
        from plughost_sdk import Command, EventHandler, HookHandler, Plugin


        class Commands(Plugin):
            @Command("broken", pattern="^/broken(")
            async def broken(self, **kwargs):
                return True, "x", True

            @Command("silent")
            async def silent(self, **kwargs):
                return True, "x", True

            @HookHandler("maisaka.planner.before_request")
            async def planner(self, **kwargs):
                return None

            @HookHandler("maisaka.planer.after_response")
            async def typo(self, **kwargs):
                return None

            @EventHandler("odd", event_type="on_message")
            async def odd(self, **kwargs):
                return None


        def create_plugin():
            return Commands()
        """,
    )

    report = await check_plugins([tmp_path])

    assert [(p.line, p.severity, p.message) for p in _only(report, "tests.commands")] == [
        (
            6,
            "error",
            "command 'broken': pattern '^/broken(' is refused, so it never runs: "
            "RE2 cannot match it (missing ): ^/broken()",
        ),
        (10, "warning", "command 'silent': has neither a pattern nor an alias, so it never runs"),
        (
            18,
            "warning",
            "hook handler 'typo': hook 'maisaka.planer.after_response' is not one MaiBot runs; "
            "did you mean 'maisaka.planner.after_response'?",
        ),
    ]
    listed = {(c["type"], c["name"]) for c in report.components["tests.commands"]}
    assert listed == {
        ("COMMAND", "broken"),
        ("COMMAND", "silent"),
        ("HOOK_HANDLER", "planner"),
        ("HOOK_HANDLER", "typo"),
        ("EVENT_HANDLER", "odd"),
    }
    assert report.to_dict()["components"]["tests.commands"][0]["metadata"]["handler_name"]


async def test_shared_tool_names_unknown_fields_and_missing_descriptions_are_warnings(
    tmp_path: Path,
) -> None:
    plugin_py = """
    from plughost_sdk import Plugin, Tool
    from plughost_sdk.types import ToolParameterInfo


    class Searcher(Plugin):
        @Tool("search", parameters=[ToolParameterInfo(name="query")])
        async def search(self, query, **kwargs):
            return query


    def create_plugin():
        return Searcher()
    """
    _write_plugin(tmp_path / "alpha", plugin_py, capabilitis=["send.text"])
    _write_plugin(tmp_path / "beta", plugin_py)

    report = await check_plugins([tmp_path])

    assert report.ok
    assert report.plugins_ok == ["tests.alpha", "tests.beta"]
    alpha = [(p.severity, p.line, p.message) for p in _only(report, "tests.alpha")]
    assert alpha == [
        ("warning", 13, "unknown field 'capabilitis' is ignored (did you mean 'capabilities'?)"),
        (
            "warning",
            7,
            "tool 'search': has no description, and the model chooses tools by their descriptions",
        ),
        ("warning", 7, "tool 'search': parameter 'query' has no description"),
    ]
    beta = [(p.severity, p.line, p.message) for p in _only(report, "tests.beta")]
    assert (
        "warning",
        7,
        "tool 'search': another plugin has a tool of this name, or of one a model could "
        "mistake for it, so the model sees it as 'beta_search'",
    ) in beta


async def test_a_config_toml_syntax_error_is_reported_at_its_line(tmp_path: Path) -> None:
    folder = _write_plugin(
        tmp_path / "configured",
        "from plughost_sdk import Plugin\n\ndef create_plugin():\n    return Plugin()\n",
    )
    (folder / "config.toml").write_text('[a]\nkey = "ok"\nbroken = \n', encoding="utf-8")

    report = await check_plugins([folder])

    assert [(Path(p.file).name, p.line) for p in report.errors] == [("config.toml", 3)]
    assert report.plugins_ok == []


async def test_missing_and_empty_directories_are_errors(tmp_path: Path) -> None:
    report = await check_plugins([tmp_path / "nowhere", tmp_path])

    assert [p.message for p in report.errors] == [
        "directory not found",
        "no plugin folder here (a plugin folder holds plugin.py and _manifest.json)",
    ]


async def test_the_json_form_holds_every_problem(tmp_path: Path) -> None:
    report = await check_plugins([TEST_PLUGINS / "bad_manifest", tmp_path / "nowhere"])

    data = json.loads(json.dumps(report.to_dict()))

    assert data["ok"] is False
    assert data["errors"] == 4
    assert data["plugins_ok"] == []
    assert set(data["problems"][0]) == {"plugin", "file", "line", "message", "fix", "severity"}


async def test_maibot_plugins_check_ok_unmodified_and_their_folders_are_left_alone(
    tmp_path: Path,
) -> None:
    shutil.copytree(TEST_PLUGINS / "maibot", tmp_path / "maibot")

    report = await check_plugins([tmp_path / "maibot"])

    assert [p.plugin for p in report.errors] == ["community.host-internals"]
    assert "MaiBot's own host code" in report.errors[0].message
    fixtures = [p for p in (TEST_PLUGINS / "maibot").iterdir() if (p / "plugin.py").is_file()]
    assert len(report.plugins_ok) == len(fixtures) - 1
    assert not any("plughost_sdk" in p.message for p in report.warnings)
    assert list((tmp_path / "maibot").glob("*/config.toml")) == []


NETWORK_PLUGIN = """
    import urllib.request
    from plughost_sdk import Plugin, Tool

    class Fetcher(Plugin):
        @Tool("fetch_page", brief_description="Fetch a page")
        async def fetch_page(self, **kwargs):
            return urllib.request.urlopen("https://api.example.com").read().decode()

    def create_plugin():
        return Fetcher()
"""


async def test_check_warns_about_network_code_without_a_grant_and_says_how_to_grant(
    tmp_path: Path,
) -> None:
    folder = _write_plugin(tmp_path / "plugins" / "fetcher", NETWORK_PLUGIN)

    report = await check_plugins([folder])
    [warning] = [p for p in _only(report, "tests.fetcher") if "network grant" in p.message]

    assert warning.severity == "warning"
    assert warning.file == str(folder / "plugin.py") and warning.line == 2
    assert "urllib.request" in warning.message
    assert "plughost serve --learn" in warning.fix and "plughost grant tests.fetcher" in warning.fix


async def test_check_is_quiet_about_network_code_the_operator_granted(tmp_path: Path) -> None:
    folder = _write_plugin(tmp_path / "plugins" / "fetcher", NETWORK_PLUGIN)
    settings = HostSettings(network_grants={"tests.fetcher": ["api.example.com"]})

    report = await check_plugins([folder], settings=settings)

    assert not [p for p in _only(report, "tests.fetcher") if "network grant" in p.message]


async def test_check_never_follows_a_symlink_out_of_the_plugin_folder(tmp_path: Path) -> None:
    folder = _write_plugin(tmp_path / "plugins" / "quiet", _QUIET)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "client.py").write_text("import requests\n")
    (folder / "vendor").symlink_to(elsewhere)

    report = await check_plugins([folder])

    assert not [p for p in _only(report, "tests.quiet") if "network grant" in p.message]


_QUIET = """
    from plughost_sdk import Plugin, Tool

    class Quiet(Plugin):
        @Tool("be_quiet", brief_description="Say nothing at all")
        async def be_quiet(self, **kwargs):
            return ""

    def create_plugin():
        return Quiet()
"""


async def test_check_warns_about_a_tool_without_a_description_whose_name_has_underscores(
    tmp_path: Path,
) -> None:
    """The SDK fills a missing brief from the name, '_' read as spaces: still no description."""
    folder = _write_plugin(
        tmp_path / "plugins" / "weather",
        """
        from plughost_sdk import Plugin, Tool

        class Weather(Plugin):
            @Tool("get_current_weather")
            async def get_current_weather(self, **kwargs):
                return "sunny"

        def create_plugin():
            return Weather()
        """,
    )

    report = await check_plugins([folder])

    assert any(
        p.message.startswith("tool 'get_current_weather': has no description")
        for p in _only(report, "tests.weather")
    )
