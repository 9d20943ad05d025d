"""The store of environments: who waits for an installation, and who does not."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from plughost.dependencies import environments
from plughost.dependencies.environments import PluginEnvironments
from plughost.dependencies.installer import InstallError, run_install
from plughost.events import EventBus
from plughost.plugins.source import PluginProblem, PluginSource
from plughost.settings import HostSettings
from tests.host.dependencies.test_requirements import plugin


async def test_plugins_without_packages_start_while_another_plugins_install_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = asyncio.Event()

    async def held_install(
        command: list[str], timeout: float, progress: Callable[[str], None]
    ) -> None:
        progress("Resolved 1 package")
        await release.wait()
        raise InstallError("nosuchpkg was not found (the test's installer)")

    monkeypatch.setattr(environments, "run_install", held_install)
    plain = plugin(tmp_path / "plain")
    needy = plugin(tmp_path / "needy", requirements_txt="nosuchpkg\n")
    needy = PluginSource(
        **{**{f: getattr(needy, f) for f in needy.__slots__}, "plugin_id": "tests.needy"}
    )
    settings = HostSettings(data_dir=tmp_path / "data")
    problems: list[PluginProblem] = []
    started = asyncio.Event()

    async def start(sources: list[PluginSource]) -> list[str]:
        if sources:
            started.set()
        return [s.plugin_id for s in sources]

    store = PluginEnvironments(lambda: settings, EventBus(), problems.append)
    running = asyncio.create_task(store.start_runners([plain, needy], start))
    async with asyncio.timeout(10):
        await started.wait()
    assert not running.done()  # the plain plugin started with the install still running
    release.set()
    assert await running == ["tests.packages"]
    assert [(p.plugin_id, p.stage) for p in problems] == [("tests.needy", "packages")]
    assert problems[0].reason == (
        "cannot install nosuchpkg: nosuchpkg was not found (the test's installer)"
    )


async def test_an_installer_line_of_any_length_is_cut_and_the_failure_is_an_install_error() -> None:
    # uv echoes the names it could not find; a plugin chooses those names.
    script = "print('x' * 300_000); print('the reason'); raise SystemExit(1)"
    shown: list[str] = []
    with pytest.raises(InstallError) as caught:
        await run_install([sys.executable, "-c", script], 30, shown.append)
    assert len(shown) == 2
    assert shown[1] == "the reason"
    assert len(shown[0]) < 1000
    assert shown[0].endswith("…")
    assert str(caught.value).endswith("the reason")
    assert len(str(caught.value)) < 2000


def test_only_requirements_the_hosts_environment_does_not_meet_are_installed() -> None:
    from importlib import metadata

    from packaging.requirements import Requirement

    from plughost.dependencies.runner_packages import already_met

    installed = metadata.version("packaging")
    asked = [
        Requirement("packaging>=1"),  # met
        Requirement("packaging<1"),  # installed, out of range
        Requirement("nosuchpkg-for-tests"),  # not installed
        Requirement("otherpkg-for-tests; python_version < '3'"),  # not for this Python
        Requirement("packaging[extra]>=1"),  # extras are not checked: installed
    ]
    missing, pins = already_met(asked)
    assert [str(r) for r in missing] == [
        "packaging<1",
        "nosuchpkg-for-tests",
        "packaging[extra]>=1",
    ]
    assert pins == [f"packaging=={installed}"]
