"""The page ships inside the plughost package: every static file is package data."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

from plughost.web.app import STATIC

HOST = Path(__file__).resolve().parents[3] / "host"


def test_every_static_file_of_the_console_is_declared_package_data() -> None:
    pyproject = tomllib.loads((HOST / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["plughost"]
    files = [p.relative_to(HOST / "plughost").as_posix() for p in STATIC.rglob("*") if p.is_file()]

    assert {"web/static/index.html", "web/static/console.js", "web/static/console.css"} <= set(
        files
    )
    missing = [f for f in files if not any(fnmatch.fnmatch(f, pattern) for pattern in patterns)]
    assert not missing, f"not package data, so missing from an installed plughost: {missing}"


def test_the_page_loads_only_its_own_files() -> None:
    page = (STATIC / "index.html").read_text(encoding="utf-8")
    script = (STATIC / "console.js").read_text(encoding="utf-8")

    assert "http://" not in page.replace("http://www.w3.org", "")
    assert "https://" not in page
    assert "https://" not in script
