"""The uv run that installs a plugin's packages depends on plughost's settings alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from plughost.dependencies.installer import install_command, install_environment, run_install
from plughost.settings import DependencySettings

BROKEN = "this is not toml\n"


def test_uv_is_told_to_read_no_configuration_file() -> None:
    command = install_command(
        DependencySettings(),
        requirements=Path("r"),
        constraints=Path("c"),
        target=Path("t"),
        cache=Path("k"),
    )
    assert command[1] == "--no-config"  # a global option, before the subcommand
    assert command[2:4] == ["pip", "install"]


def test_uv_runs_without_the_hosts_uv_variables_but_with_the_rest() -> None:
    kept = {"PATH": "/bin", "HTTPS_PROXY": "http://proxy:3128", "SSL_CERT_FILE": "/ca.pem"}
    environ = {**kept, "UV_INDEX_URL": "http://x", "UV_NATIVE_TLS": "1"}
    assert install_environment(environ) == kept


async def test_an_operators_uv_configuration_and_variables_do_not_reach_an_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each would make uv fail at once if it read it: a project file in the working
    # directory, a user file, a file named by UV_CONFIG_FILE, and a bad UV_* value.
    work, user = tmp_path / "work", tmp_path / "config"
    (user / "uv").mkdir(parents=True)
    work.mkdir()
    for broken in (work / "uv.toml", user / "uv" / "uv.toml"):
        broken.write_text(BROKEN, encoding="utf-8")
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(user))
    monkeypatch.setenv("UV_CONFIG_FILE", str(work / "uv.toml"))
    monkeypatch.setenv("UV_INDEX_STRATEGY", "not-a-strategy")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    requirements, constraints = tmp_path / "requirements.in", tmp_path / "constraints.in"
    requirements.write_text("", encoding="utf-8")
    constraints.write_text("", encoding="utf-8")
    command = install_command(
        DependencySettings(wheel_dir=wheels, offline=True),
        requirements=requirements,
        constraints=constraints,
        target=tmp_path / "site",
        cache=tmp_path / "cache",
    )
    shown: list[str] = []

    await run_install(command, 120, shown.append)

    assert not any("uv.toml" in line or "not-a-strategy" in line for line in shown)
