"""Wheels written by hand for tests that install packages: no registry, no network."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import Sequence
from pathlib import Path


def write_wheel(
    folder: Path, name: str, version: str, module_text: str = "", requires: Sequence[str] = ()
) -> Path:
    """Write ``<name>-<version>-py3-none-any.whl`` into ``folder``; return its path.

    The package's ``__init__`` sets ``VERSION`` to ``version`` (and holds
    ``module_text`` after it), so a plugin can say which copy it imported;
    ``requires`` are its ``Requires-Dist`` lines.
    """
    folder.mkdir(parents=True, exist_ok=True)
    dist_info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": f"VERSION = {version!r}\n{module_text}",
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {line}\n" for line in requires),
        f"{dist_info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = [f"{path},{_hash(text.encode())},{len(text.encode())}" for path, text in files.items()]
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = "\n".join(record) + "\n"
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def _hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"
