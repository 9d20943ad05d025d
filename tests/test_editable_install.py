"""An editable install of the three distributions is a plain ``.pth`` path, not an import hook.

setuptools installs a project editable with a static ``.pth`` file only when its
``package-dir`` maps the root package (``""``) and nothing else, every package
sitting where that mapping says; otherwise it installs a finder (an import hook)
and warns while doing so. The pyprojects say ``package-dir = {"" = "."}`` for
that reason: the first test pins the configuration, the second what the
environment running the tests actually got from it.
"""

from __future__ import annotations

import json
import tomllib
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = {"plughost-sdk": "sdk", "plughost-runner": "runner", "plughost": "host"}


@pytest.mark.parametrize("folder", sorted(DISTRIBUTIONS.values()))
def test_each_pyproject_maps_only_the_root_package_to_its_own_folder(folder: str) -> None:
    pyproject = ROOT / folder / "pyproject.toml"
    setuptools = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["setuptools"]
    find = setuptools["packages"]["find"]

    assert setuptools.get("package-dir") == {"": "."}, f"{pyproject}: set package-dir '' = '.'"
    assert find.get("where", ["."]) == ["."], f"{pyproject}: packages must be found at the root"
    assert all((pyproject.parent / pattern.rstrip("*")).is_dir() for pattern in find["include"])


@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_the_installed_editable_distribution_is_a_plain_path_entry(name: str) -> None:
    try:
        dist = distribution(name)
    except PackageNotFoundError:
        pytest.skip(f"{name} is not installed in this environment")
    direct_url = json.loads(dist.read_text("direct_url.json") or "{}")
    if not direct_url.get("dir_info", {}).get("editable"):
        pytest.skip(f"{name} is not installed editable here")
    project = Path(unquote(urlparse(direct_url["url"]).path))
    installed = [Path(str(dist.locate_file(f))) for f in dist.files or []]
    pth_files = [f for f in installed if f.name.startswith("__editable__") and f.suffix == ".pth"]
    finders = [f for f in installed if f.name.startswith("__editable__") and f.suffix == ".py"]

    assert len(pth_files) == 1, f"{name}: {installed}"
    assert finders == [], f"{name} was installed with an import hook: {finders}"
    entries = [line.strip() for line in pth_files[0].read_text(encoding="utf-8").splitlines()]
    assert [line for line in entries if line] == [str(project)]
