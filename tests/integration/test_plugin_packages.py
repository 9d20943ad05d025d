"""A plugin's own packages, installed by uv from a wheel directory, seen by its real runner.

Every install here is offline from wheels the test writes: no registry is ever
reached. The sandbox is on (its defaults), so each runner reads its
environment through Landlock where the kernel has it.
"""

from __future__ import annotations

import asyncio
import io
import json
import signal
import subprocess
import sys
import tarfile
import textwrap
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from plughost.dependencies.runner_packages import runner_packages
from plughost.events import EventKind
from plughost.host import PluginHost
from plughost.settings import DependencySettings, HostSettings
from tests.conftest import HostFactory, fast_settings
from tests.fault_injection import EventLog
from tests.integration.test_hot_reload import watch_is_live
from tests.security.sandboxed import require
from tests.waiting import wait_until
from tests.wheels import write_wheel


def write_plugin(
    root: Path, name: str, *, requirements: str = "", manifest_packages: str = ""
) -> Path:
    """A plugin whose tool ``<name>_version`` answers which tinypkg it imported, and from where."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    manifest = {
        "manifest_version": 2,
        "id": f"tests.{name}",
        "version": "1.0.0",
        "name": name,
        "author": {"name": "tests"},
    }
    if manifest_packages:
        name_, _, spec = manifest_packages.partition("==")
        manifest["dependencies"] = [{"type": "python_package", "name": name_, "version_spec": spec}]
    (folder / "_manifest.json").write_text(json.dumps(manifest))
    if requirements:
        (folder / "requirements.txt").write_text(requirements + "\n")
    (folder / "plugin.py").write_text(
        textwrap.dedent(
            f"""
            from plughost_sdk import Plugin, Tool

            class Versions(Plugin):
                @Tool("{name}_version", brief_description="Which tinypkg", read_only=True)
                async def version(self, **kwargs):
                    try:
                        import tinypkg
                    except ImportError as exc:
                        return {{"content": f"none: {{exc}}"}}
                    return {{"content": f"{{tinypkg.VERSION}} {{tinypkg.__file__}}"}}

                @Tool("{name}_tamper", brief_description="Change tinypkg", read_only=False)
                async def tamper(self, **kwargs):
                    import tinypkg
                    try:
                        with open(tinypkg.__file__, "a") as file:
                            file.write("VERSION = 'changed'\\n")
                    except OSError as exc:
                        return {{"content": f"refused: {{type(exc).__name__}}"}}
                    return {{"content": "changed"}}

            def create_plugin():
                return Versions()
            """
        )
    )
    return folder


def offline_settings(tmp_path: Path, wheels: Path) -> HostSettings:
    settings = fast_settings(tmp_path)
    packages = DependencySettings(wheel_dir=wheels, offline=True)
    return settings.model_copy(update={"dependencies": packages})


Answer = tuple[str, Path]
"""The tinypkg version a plugin imported, and the file it came from."""


async def tinypkg_of(host: PluginHost, name: str) -> Answer:
    result = await host.invoke(f"{name}_version", {})
    assert result.success, result.error_message
    version, _, file = str(result.content).partition(" ")
    return version, Path(file)


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    folder = tmp_path / "wheels"
    write_wheel(folder, "tinypkg", "1.0")
    write_wheel(folder, "tinypkg", "2.0")
    return folder


PackagesHost = Callable[..., AbstractAsyncContextManager[PluginHost]]
"""Starts a host over plugins given by keyword: name = their requirements.txt."""


@pytest.fixture
def packages_host(tmp_path: Path, wheels: Path, make_host: HostFactory) -> PackagesHost:
    @asynccontextmanager
    async def start(**plugins: str) -> AsyncIterator[PluginHost]:
        root = tmp_path / "plugins"
        for name, requirements in plugins.items():
            write_plugin(root, name, requirements=requirements)
        async with make_host([root], offline_settings(tmp_path, wheels)) as host:
            yield host

    return start


async def tinypkgs(make_host: HostFactory, settings: HostSettings, root: Path) -> list[Answer]:
    """Start a host over ``root``; each plugin's answer, in the order of their names."""
    async with make_host([root], settings) as host:
        assert host.problems == {}
        return [await tinypkg_of(host, folder.name) for folder in sorted(root.iterdir())]


@pytest.mark.parametrize(
    ("declarations", "versions"),
    [
        (
            {"new": {"manifest_packages": "tinypkg==2.0"}, "old": {"requirements": "tinypkg==1.0"}},
            ["2.0", "1.0"],
        ),
        (
            {
                "a": {"requirements": "TinyPkg == 1.0  # comment"},
                "b": {"manifest_packages": "tinypkg==1.0"},
            },
            ["1.0", "1.0"],
        ),
    ],
    ids=["conflicting versions", "one set written two ways"],
)
async def test_each_plugin_imports_its_own_versions_and_equal_sets_share_one_environment(
    tmp_path: Path,
    wheels: Path,
    make_host: HostFactory,
    declarations: dict[str, dict[str, str]],
    versions: list[str],
) -> None:
    root = tmp_path / "plugins"
    for name, declared in declarations.items():
        write_plugin(root, name, **declared)
    answers = await tinypkgs(make_host, offline_settings(tmp_path, wheels), root)
    assert [version for version, _ in answers] == versions
    store = tmp_path / "data" / ".packages"
    used = {file.relative_to(store).parts[0] for _, file in answers}
    built = {p.name for p in store.iterdir() if p.name != "cache"}
    assert used == built
    assert len(built) == len(set(versions))  # one environment per distinct set


async def test_with_a_single_shared_runner_plugins_with_packages_still_get_their_own(
    tmp_path: Path, wheels: Path, make_host: HostFactory
) -> None:
    root = tmp_path / "plugins"
    write_plugin(root, "bare")
    write_plugin(root, "new", requirements="tinypkg==2.0")
    write_plugin(root, "old", requirements="tinypkg==1.0")
    settings = offline_settings(tmp_path, wheels).model_copy(update={"runner_grouping": "single"})
    async with make_host([root], settings) as host:
        answers = [await tinypkg_of(host, name) for name in ("new", "old")]
        runners = {name: host.runner_for(f"tests.{name}") for name in ("bare", "new", "old")}
    assert [version for version, _ in answers] == ["2.0", "1.0"]
    assert len({id(runner) for runner in runners.values()}) == 3


async def test_a_plugin_without_packages_is_untouched_and_imports_nothing_extra(
    tmp_path: Path, wheels: Path, make_host: HostFactory
) -> None:
    root = tmp_path / "plugins"
    folder = write_plugin(root, "bare")
    async with make_host([root], offline_settings(tmp_path, wheels)) as host:
        result = await host.invoke("bare_version", {})
        assert host.sources["tests.bare"].packages is None
    assert str(result.content).startswith("none: No module named 'tinypkg'")
    assert folder.is_dir()


async def test_a_broken_requirement_names_plugin_package_and_reason_while_others_run(
    tmp_path: Path, packages_host: PackagesHost
) -> None:
    root = tmp_path / "plugins"
    broken = "tinypkg==1.0\nnosuchpkg>=3"
    async with packages_host(broken=broken, fine="tinypkg==2.0", bare="") as host:
        problem = host.problems["tests.broken"]
        assert (await tinypkg_of(host, "fine"))[0] == "2.0"
        assert (await host.invoke("bare_version", {})).success
        assert "tests.broken" not in host.sources
    store = tmp_path / "data" / ".packages"
    built = [p for p in store.iterdir() if p.name != "cache"]
    assert [p.name.startswith(".") for p in built] == [False]  # only fine's: none half-built
    assert problem.stage == "packages"
    assert problem.file == str(root / "broken" / "requirements.txt")
    assert problem.reason.startswith("cannot install nosuchpkg: ")
    assert "nosuchpkg" in problem.reason.split(": ", 1)[1]  # uv's own reason follows
    assert "plugin tests.broken (packages)" in f"plugin {problem.describe()}"


async def test_a_package_the_runner_loads_itself_in_another_version_is_refused_naming_both(
    tmp_path: Path, packages_host: PackagesHost
) -> None:
    async with packages_host(old_pydantic="pydantic<2") as host:
        problem = host.problems["tests.old_pydantic"]
    assert problem.stage == "packages"
    assert "pydantic<2" in problem.reason
    assert "the runner itself loads pydantic 2." in problem.reason
    assert not (tmp_path / "data" / ".packages").exists()  # refused before any install


async def test_a_package_needing_another_version_of_a_runner_package_is_refused_by_uv(
    wheels: Path, packages_host: PackagesHost
) -> None:
    ours = runner_packages()["pydantic"].version
    write_wheel(wheels, "pydantic", "1.0")  # what the resolver would pick, unconstrained
    write_wheel(wheels, "pydantic", ours)
    write_wheel(wheels, "oldmodels", "1.0", requires=["pydantic<2"])
    async with packages_host(models="oldmodels") as host:
        problem = host.problems["tests.models"]
    assert problem.stage == "packages"
    assert problem.reason.startswith("cannot install oldmodels: ")
    assert f"pydantic=={ours}" in problem.reason  # uv's reason cites the runner's pin


async def test_a_sandboxed_plugin_cannot_change_the_packages_it_shares(
    packages_host: PackagesHost,
) -> None:
    async with packages_host(writer="tinypkg==1.0", reader="tinypkg==1.0") as host:
        require(host, "landlock")
        tampered = await host.invoke("writer_tamper", {})
        version, file = await tinypkg_of(host, "reader")
    assert tampered.content == "refused: PermissionError"
    assert version == "1.0"
    assert "changed" not in file.read_text()


async def test_a_package_with_no_wheel_is_not_built_on_the_host(
    tmp_path: Path, wheels: Path, packages_host: PackagesHost
) -> None:
    planted = tmp_path / "planted"
    setup = f"open({str(planted)!r}, 'w').close()\nfrom setuptools import setup\nsetup()\n"
    with tarfile.open(wheels / "srconly-1.0.tar.gz", "w:gz") as archive:
        for name, text in {"PKG-INFO": "Name: srconly\nVersion: 1.0\n", "setup.py": setup}.items():
            info = tarfile.TarInfo(f"srconly-1.0/{name}")
            info.size = len(text.encode())
            archive.addfile(info, io.BytesIO(text.encode()))
    async with packages_host(sources="srconly") as host:
        problem = host.problems["tests.sources"]
    assert problem.reason.startswith("cannot install srconly: ")
    assert "build" in problem.reason.split(": ", 1)[1]
    assert not planted.exists()  # its setup.py never ran


async def test_a_plugin_importing_a_package_it_did_not_declare_is_told_to_declare_it(
    tmp_path: Path, make_host: HostFactory
) -> None:
    folder = write_plugin(tmp_path / "plugins", "undeclared")
    (folder / "plugin.py").write_text("import tinypkg\n" + (folder / "plugin.py").read_text())
    async with make_host([folder.parent]) as host:
        problem = host.problems["tests.undeclared"]
    assert problem.stage == "import"
    assert "No module named 'tinypkg'; if tinypkg comes from a package on PyPI" in problem.reason
    assert "requirements.txt" in problem.reason


async def test_serve_shows_each_installation_while_it_starts(tmp_path: Path, wheels: Path) -> None:
    write_plugin(tmp_path / "plugins", "served", requirements="tinypkg==1.0")
    config = tmp_path / "plughost.toml"
    config.write_text(
        '[host]\ndata_dir = "data"\ntemp_dir = "temp"\n'
        '[host.dependencies]\nwheel_dir = "wheels"\noffline = true\n'
    )
    argv = [sys.executable, "-m", "plughost", "serve", "--config", str(config)]
    argv += ["--plugins", str(tmp_path / "plugins")]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    try:
        assert process.stderr is not None
        stream = process.stderr

        async def installed() -> bool:
            lines.append(await asyncio.to_thread(stream.readline))
            return "packages.installed" in lines[-1] or not lines[-1]

        await wait_until(installed, timeout=60, interval=0, what="the installed line")
        process.send_signal(signal.SIGINT)
        assert await asyncio.to_thread(process.wait, 30) == 0, "".join(lines)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        if process.stderr is not None:
            process.stderr.close()
    kinds = [line.split()[1] for line in lines if " packages." in line]  # after the time
    assert kinds == ["packages.installing", "packages.installed"]
    assert "plugin tests.served: installing tinypkg==1.0" in "".join(lines)


@dataclass
class Watched:
    host: PluginHost
    folder: Path
    events: EventLog


@pytest.fixture
async def watched(tmp_path: Path, wheels: Path, make_host: HostFactory) -> AsyncIterator[Watched]:
    root = tmp_path / "plugins"
    folder = write_plugin(root, "edited", requirements="tinypkg==1.0")
    events = EventLog()
    async with make_host([root], offline_settings(tmp_path, wheels)) as host:
        host.events.add_callback(events)
        watch = asyncio.create_task(host.watch())
        await watch_is_live(host, root)
        yield Watched(host, folder, events)
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)


async def test_editing_requirements_installs_the_new_set_and_reloads_the_plugin(
    watched: Watched,
) -> None:
    assert (await tinypkg_of(watched.host, "edited"))[0] == "1.0"
    (watched.folder / "requirements.txt").write_text("tinypkg==2.0\n")
    installing = await watched.events.next(EventKind.PACKAGES_INSTALLING, "tests.edited")
    progress = await watched.events.next(EventKind.PACKAGES_PROGRESS, "tests.edited")
    installed = await watched.events.next(EventKind.PACKAGES_INSTALLED, "tests.edited")
    await watched.events.next(EventKind.RELOAD_SUCCEEDED, "tests.edited")
    version, file = await tinypkg_of(watched.host, "edited")
    assert version == "2.0"
    assert installing.details["packages"] == ["tinypkg==2.0"]
    assert progress.message.startswith("plugin tests.edited: ")
    assert file.is_relative_to(installed.details["environment"])


async def test_an_edit_to_an_uninstallable_requirement_keeps_the_old_version_serving(
    watched: Watched,
) -> None:
    (watched.folder / "requirements.txt").write_text("tinypkg==9.9\n")
    failed = await watched.events.next(EventKind.RELOAD_FAILED, "tests.edited")
    await watched.events.next(EventKind.RELOAD_ROLLED_BACK, "tests.edited")
    assert failed.details["stage"] == "packages"
    assert "tinypkg" in failed.details["reason"]
    assert (await tinypkg_of(watched.host, "edited"))[0] == "1.0"


def write_bm25_plugin(root: Path, requirement: str) -> Path:
    """A plugin declaring ``requirement`` whose tool says which rank_bm25 it imported."""
    folder = root / "ranker"
    folder.mkdir(parents=True)
    (folder / "_manifest.json").write_text(
        json.dumps(
            {
                "manifest_version": 2,
                "id": "tests.ranker",
                "version": "1.0.0",
                "name": "ranker",
                "author": {"name": "tests"},
            }
        )
    )
    (folder / "requirements.txt").write_text(requirement + "\n")
    (folder / "plugin.py").write_text(
        textwrap.dedent(
            """
            from plughost_sdk import Plugin, Tool

            class Ranker(Plugin):
                @Tool("ranker_version", brief_description="Which rank_bm25", read_only=True)
                async def version(self, **kwargs):
                    import rank_bm25
                    return {"content": getattr(rank_bm25, "VERSION", "the host's")}

            def create_plugin():
                return Ranker()
            """
        )
    )
    return folder


async def test_a_requirement_the_hosts_environment_meets_is_loaded_from_it_not_installed(
    tmp_path: Path, make_host: HostFactory
) -> None:
    # The wheel directory is empty and the install offline: installing would fail.
    root = tmp_path / "plugins"
    write_bm25_plugin(root, "rank-bm25>=0.2")
    settings = offline_settings(tmp_path, tmp_path / "no-wheels")
    async with make_host([root], settings) as host:
        assert host.problems == {}
        assert host.sources["tests.ranker"].packages is None
        result = await host.invoke("ranker_version", {})
    assert result.success, result.error_message
    assert result.content == "the host's"
    assert not (tmp_path / "data" / ".packages").exists() or not any(
        p.name != "cache" for p in (tmp_path / "data" / ".packages").iterdir()
    )


async def test_a_version_the_hosts_environment_lacks_is_installed_and_wins_over_its_copy(
    tmp_path: Path, make_host: HostFactory
) -> None:
    wheels = tmp_path / "wheels"
    write_wheel(wheels, "rank_bm25", "0.0.1")
    root = tmp_path / "plugins"
    write_bm25_plugin(root, "rank-bm25==0.0.1")
    async with make_host([root], offline_settings(tmp_path, wheels)) as host:
        assert host.problems == {}
        result = await host.invoke("ranker_version", {})
    assert result.success, result.error_message
    assert result.content == "0.0.1"
