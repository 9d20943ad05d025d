"""A forked runner's seccomp filter: built once by the fork server, loaded by every runner.

The intruder's ``unshare(CLONE_NEWUSER)`` is answered EPERM by the filter
alone: without it the kernel would answer EINVAL (a runner has threads).
"""

from __future__ import annotations

from pathlib import Path

from plughost.host import PluginHost
from tests.conftest import fast_settings
from tests.security.sandboxed import Attack, plant_plugins, require


async def test_every_forked_runner_refuses_a_plugin_a_new_namespace(tmp_path: Path) -> None:
    plugins = plant_plugins(tmp_path)
    settings = fast_settings(tmp_path)
    async with PluginHost([plugins / "hostile_intruder"], settings=settings) as host:
        require(host, "seccomp")
        assert host._fork_server is not None  # the runner was forked, not started afresh
        attack = Attack(host, plugins, settings.data_dir)

        first = await attack.attempt("intrude_unshare")
        assert await host.reload_plugin("tests.hostile-intruder")  # a second fork

        second = await attack.attempt("intrude_unshare")

        assert not first["allowed"] and "Operation not permitted" in first["detail"]
        assert not second["allowed"] and "Operation not permitted" in second["detail"]
