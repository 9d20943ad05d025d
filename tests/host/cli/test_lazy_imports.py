"""Each command imports what it needs and nothing else: the import graph, not a timing.

``plughost --help`` must answer at once, and an embedder who never uses MCP must
not pay for the MCP SDK. Timings are machine-dependent (``scripts/bench_cli.py``
measures them); which modules a command loads is not, so that is what is pinned.
Every check runs in a fresh interpreter, because this test process has long since
imported everything.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES

HEAVY = (
    "mcp",
    "jieba",
    "jsonschema",
    "watchfiles",
    "zmq",
    "rich",
    "pydantic",
    "plughost.host",
    "plughost.cli.serve_config",  # what a one-shot command reads only with --config
)

# Prints, as JSON, which of HEAVY the snippet before it imported.
_REPORT = (
    "\nimport json as _j, sys as _s\n"
    "_h = {heavy!r}\n"
    "print(_j.dumps(sorted(m for m in _h if m in _s.modules)))\n"
)


def loaded_after(code: str) -> set[str]:
    script = code + _REPORT.format(heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_import_plughost_loads_none_of_the_heavy_modules() -> None:
    assert loaded_after("import plughost") == set()


def test_help_loads_only_click() -> None:
    code = (
        "from plughost.cli.main import cli\n"
        "try:\n    cli(['--help'], prog_name='plughost')\n"
        "except SystemExit as exit:\n    assert exit.code == 0\n"
    )

    assert loaded_after(code) == set()


def test_the_early_children_start_before_the_settings_are_imported() -> None:
    # A one-shot command starts the fork server and the sandbox probe first, so both
    # work while the command imports pydantic and the host: neither may need them.
    code = (
        "import sys, plughost.runners.early\n"
        "assert 'plughost.runners.sandbox_probe' in sys.modules\n"  # the check sees real imports
    )

    assert loaded_after(code) == set()


def test_an_embedder_without_mcp_does_not_import_the_mcp_sdk() -> None:
    code = (
        "from plughost import PluginHost, ToolRegistry, BuiltinToolProvider, HostSettings\n"
        "from plughost.tools.history import to_openai_turn\n"
    )
    loaded = loaded_after(code)

    assert "mcp" not in loaded
    assert "jieba" not in loaded
    assert "plughost.host" in loaded  # the check sees real imports


def test_the_mcp_names_are_still_there_when_asked_for() -> None:
    loaded = loaded_after("from plughost import MCPToolProvider, serve_http")

    assert "mcp" in loaded


@pytest.mark.parametrize(
    ("command", "absent"),
    [
        (
            ["tools", "--plugins", "{plugins}"],
            {"mcp", "jieba", "jsonschema", "watchfiles", "plughost.cli.serve_config"},
        ),
        (
            ["components", "--plugins", "{plugins}"],
            {"mcp", "jieba", "jsonschema", "watchfiles", "plughost.cli.serve_config"},
        ),
        (
            # A flat schema's well-formed arguments are checked without jsonschema.
            ["call", "unit_convert", "--plugins", "{plugins}", "--args", "{args}"],
            {"mcp", "jieba", "jsonschema", "watchfiles", "plughost.cli.serve_config"},
        ),
    ],
)
def test_one_shot_commands_load_neither_mcp_nor_search_nor_the_watcher(
    command: list[str], absent: set[str], tmp_path: Path
) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "unit_converter").symlink_to(EXAMPLES / "unit_converter")
    args = json.dumps({"value": 1, "from_unit": "m", "to_unit": "cm"})
    argv = [part.format(plugins=plugins, args=args) for part in command]
    code = (
        "import atexit, json as _j, sys as _s\n"
        f"atexit.register(lambda: print(_j.dumps(sorted(m for m in {HEAVY!r} "
        "if m in _s.modules)), file=_s.stderr))\n"
        "from plughost.cli.main import main\n"
        f"_s.argv = ['plughost', *{argv!r}]\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stderr.strip().splitlines()[-1]))

    assert loaded & absent == set()
    assert "plughost.host" in loaded  # the command really ran the host


def test_the_early_mcp_launch_loads_none_of_the_heavy_modules() -> None:
    # It starts the upstream servers while serve imports the rest: it may need none of it.
    assert loaded_after("import plughost.mcp.early_launch") == set()


def test_serve_launches_its_upstreams_before_importing_the_mcp_sdk(tmp_path: Path) -> None:
    config = tmp_path / "up.toml"
    config.write_text('[mcp.servers.a]\ncommand = "true"\n')
    # serve's early launch reports what was imported when it ran, then ends the process.
    code = (
        "import json, os, sys\n"
        "from plughost.mcp import early_launch\n"
        f"heavy = {HEAVY!r}\n"
        "def launch(path, version):\n"
        "    print(json.dumps(sorted(m for m in heavy if m in sys.modules)), flush=True)\n"
        "    os._exit(0)\n"
        "early_launch.launch = launch\n"
        "from plughost.cli.main import cli\n"
        f"cli(['serve', '--config', {str(config)!r}, '--mcp-stdio'], prog_name='plughost')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


@pytest.mark.parametrize("extra", [[], ["--web", "127.0.0.1:0"]], ids=["plain", "web"])
def test_serve_without_mcp_never_imports_the_mcp_sdk(extra: list[str], tmp_path: Path) -> None:
    # No --mcp-stdio/--mcp-http and no [mcp] servers: nothing serve runs needs the SDK.
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "unit_converter").symlink_to(EXAMPLES / "unit_converter")
    argv = ["serve", "--no-watch", "--plugins", str(plugins), *extra]
    # Once the plugins have started and the table is printed, report and end the process.
    code = (
        "import json, os, sys\n"
        "import plughost.cli.serve as serve\n"
        f"heavy = {HEAVY!r}\n"
        "printed = serve._print_summary\n"
        "def summary(*args, **kwargs):\n"
        "    printed(*args, **kwargs)\n"
        "    print(json.dumps(sorted(m for m in heavy if m in sys.modules)), flush=True)\n"
        "    os._exit(0)\n"
        "serve._print_summary = summary\n"
        "from plughost.cli.main import cli\n"
        f"cli({argv!r}, prog_name='plughost')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,  # its data directory
    )

    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "mcp" not in loaded
    assert "plughost.host" in loaded  # the host really started
