"""The console script ends without the interpreter's teardown, and loses nothing by it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from plughost.cli.quick_exit import exit_code
from tests.conftest import EXAMPLES


def run_script(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code), encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize(
    ("code", "expected"), [(None, 0), (0, 0), (3, 3), (130, 130), ("stopped: reason", 1)]
)
def test_exit_codes_are_the_interpreters(code: object, expected: int) -> None:
    assert exit_code(code) == expected


def test_a_one_shot_command_flushes_its_output_and_runs_atexit_handlers(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "unit_converter").symlink_to(EXAMPLES / "unit_converter")
    marker = tmp_path / "atexit-ran"
    done = run_script(
        f"""
        import atexit, pathlib, sys
        atexit.register(lambda: pathlib.Path({str(marker)!r}).write_text("yes"))
        from plughost.cli.main import main
        sys.argv = ["plughost", "tools", "--json", "--plugins", {str(plugins)!r}]
        main()
        raise SystemExit("main() returned instead of ending the process")
        """,
        tmp_path,
    )

    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)  # all of it arrived: the JSON parses
    assert [tool["name"] for tool in listed["tools"]] == ["unit_convert"]
    assert marker.read_text() == "yes"


def test_the_exit_code_of_a_failed_call_is_kept(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "unit_converter").symlink_to(EXAMPLES / "unit_converter")
    done = subprocess.run(
        [Path(sys.executable).parent / "plughost", "call", "no_such_tool", "--plugins", plugins],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 2
    assert "no_such_tool" in done.stderr


def test_a_thread_still_running_is_joined_as_a_normal_exit_would(tmp_path: Path) -> None:
    # The thread writes its file only once the interpreter's own shutdown has begun
    # (the main thread is marked stopped there): an exit that skipped it would lose it.
    out = tmp_path / "thread-finished"
    done = run_script(
        f"""
        import pathlib, threading, time
        from plughost.cli.quick_exit import run_and_exit

        def late_writer():
            while threading.main_thread().is_alive():
                time.sleep(0.01)
            pathlib.Path({str(out)!r}).write_text("done")

        threading.Thread(target=late_writer).start()
        run_and_exit(lambda: None)
        """,
        tmp_path,
    )

    assert done.returncode == 0, done.stderr
    assert out.read_text() == "done"


def test_a_message_exit_prints_it_and_exits_1(tmp_path: Path) -> None:
    done = run_script(
        """
        from plughost.cli.quick_exit import run_and_exit

        def fail():
            raise SystemExit("the plugins folder is gone")

        run_and_exit(fail)
        """,
        tmp_path,
    )

    assert done.returncode == 1
    assert "the plugins folder is gone" in done.stderr
