"""A hostile plugin, in a real sandboxed runner, cannot read or change what is not its own.

Each attempt below succeeded before runners were sandboxed (the intruder ran
as the host's user with the host's view of the filesystem and of ``/proc``).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from plughost.host import PluginHost
from tests.conftest import fast_settings
from tests.security.sandboxed import NEIGHBOUR_ID, NEIGHBOUR_SECRET, Attack, plant_plugins, require

shared = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def attack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Attack]:
    root = tmp_path_factory.mktemp("filesystem")
    plugins = plant_plugins(root)
    settings = fast_settings(root)
    host = PluginHost([plugins / "hostile_intruder", plugins / "echo"], settings=settings)
    await host.start()
    try:
        yield Attack(host, plugins, settings.data_dir)
    finally:
        await host.aclose()


@shared
async def test_a_plugin_cannot_read_the_hosts_environment(attack: Attack) -> None:
    require(attack.host, "landlock")

    verdict = await attack.attempt("intrude_read", path=f"/proc/{os.getpid()}/environ")

    assert not verdict["allowed"], "the host's environment (its API keys) was readable"
    assert "PATH=" not in str(verdict["detail"])


@shared
async def test_a_plugin_cannot_read_a_neighbours_config_or_data(attack: Attack) -> None:
    require(attack.host, "landlock")
    notes = attack.data / NEIGHBOUR_ID / "notes.txt"
    notes.parent.mkdir(parents=True, exist_ok=True)
    notes.write_text(NEIGHBOUR_SECRET)

    config = await attack.attempt("intrude_read", path=str(attack.neighbour / "config.toml"))
    data = await attack.attempt("intrude_read", path=str(notes))

    assert not config["allowed"] and not data["allowed"]
    assert NEIGHBOUR_SECRET not in f"{config['detail']} {data['detail']}"


@shared
async def test_a_plugin_cannot_read_the_host_users_other_files(
    attack: Attack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    require(attack.host, "landlock")
    dotenv = tmp_path_factory.mktemp("bot") / ".env"  # the user's files: a bot's .env, ~/.ssh
    dotenv.write_text("OPENAI_API_KEY=sk-not-for-plugins\n")
    workdir = Path.cwd() / "operator-notes.txt"  # in the host's working directory
    workdir.write_text("not for plugins\n")

    elsewhere = await attack.attempt("intrude_read", path=str(dotenv))
    in_workdir = await attack.attempt("intrude_read", path=str(workdir))

    assert not elsewhere["allowed"]
    assert not in_workdir["allowed"]


@shared
async def test_a_plugin_cannot_rewrite_the_manifest_the_host_reads(attack: Attack) -> None:
    """Its folder is writable only as a copy-on-write view: the host's copy never changes."""
    require(attack.host, "landlock")
    manifest = attack.intruder / "_manifest.json"
    before = manifest.read_bytes()

    grant_all = '{"capabilities": ["*"]}'
    verdict = await attack.attempt("intrude_write", path=str(manifest), text=grant_all)

    assert verdict["allowed"] == ("folder_overlay" in attack.host.sandbox.active)  # type: ignore[union-attr]
    assert manifest.read_bytes() == before


@shared
async def test_a_plugin_cannot_change_a_neighbours_code(attack: Attack) -> None:
    require(attack.host, "landlock")
    code = attack.neighbour / "plugin.py"
    before = code.read_bytes()

    verdict = await attack.attempt("intrude_write", path=str(code), text="\nimport os\n")

    assert not verdict["allowed"]
    assert code.read_bytes() == before


@shared
async def test_a_plugin_cannot_look_into_a_neighbour_runner_even_as_root(attack: Attack) -> None:
    """Non-dumpable runners stop a same-user neighbour, not root's CAP_SYS_PTRACE; Landlock does."""
    require(attack.host, "landlock")
    neighbour = attack.host.runner_for(NEIGHBOUR_ID)
    assert neighbour is not None and neighbour.pid is not None

    environ = await attack.attempt("intrude_read", path=f"/proc/{neighbour.pid}/environ")
    maps = await attack.attempt("intrude_read", path=f"/proc/{neighbour.pid}/maps")

    assert not environ["allowed"] and not maps["allowed"]


@shared
async def test_a_plugin_cannot_signal_the_host(attack: Attack) -> None:
    require(attack.host, "landlock_scopes")

    verdict = await attack.attempt("intrude_signal", pid=os.getpid())

    assert not verdict["allowed"]


@shared
async def test_a_sandboxed_plugin_still_reads_its_code_and_writes_its_own_directories(
    attack: Attack,
) -> None:
    require(attack.host, "landlock")
    own = attack.data / "tests.hostile-intruder" / "state.txt"

    wrote = await attack.attempt("intrude_write", path=str(own), text="mine")
    read = await attack.attempt("intrude_read", path=str(own))
    code = await attack.attempt("intrude_read", path=str(attack.intruder / "plugin.py"))

    assert wrote["allowed"] and read == {"content": "allowed", "allowed": True, "detail": "mine"}
    assert code["allowed"] and "class Intruder" in code["detail"]


async def test_a_plugin_cannot_read_the_curve_server_secret(tmp_path: Path) -> None:
    plugins = plant_plugins(tmp_path)
    settings = fast_settings(tmp_path, transport="tcp")
    async with PluginHost([plugins / "hostile_intruder"], settings=settings) as host:
        require(host, "landlock")
        secret = next(Path(p) for p in _runtime_files(host) if p.endswith("server.key_secret"))
        attack = Attack(host, plugins, settings.data_dir)

        verdict = await attack.attempt("intrude_read", path=str(secret))

        assert not verdict["allowed"]
        assert secret.read_text() not in str(verdict["detail"])


def _runtime_files(host: PluginHost) -> list[str]:
    runtime = host.runtime_dir
    assert runtime is not None
    return [str(p) for p in runtime.iterdir()]


async def test_a_runner_started_as_a_new_interpreter_is_confined_the_same_way(
    tmp_path: Path,
) -> None:
    plugins = plant_plugins(tmp_path)
    settings = fast_settings(tmp_path, fork_server=False)
    async with PluginHost([plugins / "hostile_intruder"], settings=settings) as host:
        require(host, "landlock")
        attack = Attack(host, plugins, settings.data_dir)

        config = await attack.attempt("intrude_read", path=str(attack.neighbour / "config.toml"))
        environ = await attack.attempt("intrude_read", path=f"/proc/{os.getpid()}/environ")

        assert not config["allowed"] and not environ["allowed"]
        [status] = host.status()
        assert "landlock" in status.sandbox
