"""What a plugin declares: read from three places, normalized, refused when it is not a package."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from plughost.dependencies.environments import environment_digest
from plughost.dependencies.installer import install_command
from plughost.dependencies.requirements import DependencyError, plugin_requirements
from plughost.dependencies.runner_packages import conflicts, constraints, runner_packages
from plughost.plugins.source import PluginSource, read_plugin
from plughost.settings import DependencySettings


def plugin(
    tmp_path: Path, *, packages: list[dict[str, str]] | None = None, **files: str
) -> PluginSource:
    folder = tmp_path / "plugin"
    folder.mkdir(parents=True)
    manifest = {
        "manifest_version": 2,
        "id": "tests.packages",
        "version": "1.0.0",
        "name": "packages",
        "author": {"name": "tests"},
        "dependencies": [{"type": "python_package", **p} for p in packages or []],
    }
    (folder / "_manifest.json").write_text(json.dumps(manifest))
    (folder / "plugin.py").write_text("")
    for name, text in files.items():
        (folder / name.replace("_", ".", 1)).write_text(text)
    return read_plugin(folder)


def declared(source: PluginSource) -> dict[str, str]:
    return {name: str(d.requirement) for name, d in plugin_requirements(source).items()}


def test_packages_from_manifest_requirements_txt_and_pyproject_are_merged_by_name(
    tmp_path: Path,
) -> None:
    source = plugin(
        tmp_path,
        packages=[{"name": "Beautiful_Soup4", "version_spec": ">=4.0"}, {"name": "pillow"}],
        requirements_txt="# scrapers\naiohttp>=3.9  # http\nbeautifulsoup4<5\n\n",
        pyproject_toml='[project]\nname = "x"\ndependencies = ["aiohttp<4", "yarl"]\n',
    )
    assert declared(source) == {
        "aiohttp": "aiohttp<4,>=3.9",
        "beautiful-soup4": "beautiful-soup4>=4.0",
        "beautifulsoup4": "beautifulsoup4<5",
        "pillow": "pillow",
        "yarl": "yarl",
    }


def test_a_bare_manifest_version_means_exactly_that_version(tmp_path: Path) -> None:
    source = plugin(tmp_path, packages=[{"name": "tinypkg", "version_spec": "1.0"}])
    assert declared(source) == {"tinypkg": "tinypkg==1.0"}


def test_the_same_set_written_otherwise_has_the_same_digest(tmp_path: Path) -> None:
    one = plugin(tmp_path / "a", requirements_txt="Tiny_Pkg>=1,<2\nyarl\n")
    two = plugin(
        tmp_path / "b", packages=[{"name": "yarl"}, {"name": "tiny.pkg", "version_spec": "<2,>=1"}]
    )
    digests = {
        environment_digest([str(d.requirement) for d in plugin_requirements(s).values()], [])
        for s in (one, two)
    }
    assert len(digests) == 1


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("--index-url https://evil.example/simple", "is an installer option, not a package"),
        ("-r other.txt", "is an installer option, not a package"),
        ("tinypkg @ https://example.com/tinypkg.whl", "names a URL"),
        ("tiny pkg ==", "is not a package requirement"),
    ],
)
def test_a_line_that_is_not_a_package_is_refused_naming_the_file_and_the_fix(
    tmp_path: Path, line: str, says: str
) -> None:
    source = plugin(tmp_path, requirements_txt=f"{line}\n")
    with pytest.raises(DependencyError) as caught:
        plugin_requirements(source)
    assert caught.value.plugin_id == "tests.packages"
    assert caught.value.file == str(source.path / "requirements.txt")
    assert says in caught.value.reason


def test_a_pyproject_that_is_not_toml_is_refused_naming_the_plugin_and_the_file(
    tmp_path: Path,
) -> None:
    source = plugin(tmp_path, pyproject_toml='[project\ndependencies = ["yarl"]\n')
    with pytest.raises(DependencyError) as caught:
        plugin_requirements(source)
    assert caught.value.plugin_id == "tests.packages"
    assert caught.value.file == str(source.path / "pyproject.toml")
    assert "invalid TOML" in caught.value.reason


def test_the_runners_own_packages_are_read_from_installed_metadata() -> None:
    own = runner_packages()
    assert {"pydantic", "msgpack", "pyzmq", "plughost-sdk"} <= set(own)
    assert f"pydantic=={own['pydantic'].version}" in constraints()


def test_a_package_the_runner_loads_in_another_version_conflicts_naming_both() -> None:
    version = runner_packages()["msgpack"].version
    found = conflicts([Requirement("msgpack<0.1"), Requirement(f"msgpack=={version}")])
    assert len(found) == 1
    assert found[0].startswith(
        f"it needs msgpack<0.1, but the runner itself loads msgpack {version}"
    )


def test_offline_installs_only_from_the_wheel_directory_and_never_build(tmp_path: Path) -> None:
    settings = DependencySettings(wheel_dir=tmp_path, offline=True)
    command = install_command(
        settings, requirements=Path("r"), constraints=Path("c"), target=Path("t"), cache=Path("k")
    )
    assert {"--offline", "--no-index", "--no-build"} <= set(command)
    assert command[command.index("--find-links") + 1] == str(tmp_path.resolve())
    online = install_command(
        DependencySettings(source_builds=True),
        requirements=Path("r"),
        constraints=Path("c"),
        target=Path("t"),
        cache=Path("k"),
    )
    assert not {"--offline", "--no-index", "--no-build", "--find-links"} & set(online)


def test_offline_without_a_wheel_directory_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="offline = true needs wheel_dir"):
        DependencySettings(offline=True)


def test_more_packages_than_a_plugin_may_declare_are_refused_before_any_is_read(
    tmp_path: Path,
) -> None:
    from plughost.dependencies.requirements import MAX_PACKAGES

    many = "".join(f"package-{n}\n" for n in range(MAX_PACKAGES + 1))
    source = plugin(tmp_path, requirements_txt=many)
    with pytest.raises(DependencyError) as caught:
        plugin_requirements(source)
    assert caught.value.file == str(source.path / "requirements.txt")
    assert f"{MAX_PACKAGES + 1} packages declared" in caught.value.reason
    assert len(caught.value.reason) < 300  # none of the names is repeated back
    fine = plugin(tmp_path / "fine", requirements_txt=many.split("\n", 1)[1])
    assert len(plugin_requirements(fine)) == MAX_PACKAGES
