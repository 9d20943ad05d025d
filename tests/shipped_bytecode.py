"""Write the ``.pyc`` files a plugin folder may ship beside its sources, for tests.

Two kinds, as Python's import system reads them (PEP 552): a timestamp
``.pyc`` whose header names the source's size and modification time (what a
zip or tar archive keeps), and an *unchecked* hash-based ``.pyc``, which Python
runs without looking at the source at all.
"""

from __future__ import annotations

import importlib.util
import marshal
from pathlib import Path

_TIMESTAMP = 0
_UNCHECKED_HASH = 0b01  # hash-based, check_source unset


def ship_bytecode(source: Path, other_source: str, *, unchecked_hash: bool) -> Path:
    """Put in ``source``'s ``__pycache__`` the bytecode of ``other_source``, valid for it."""
    code = compile(other_source, str(source), "exec", dont_inherit=True)
    header = importlib.util.MAGIC_NUMBER
    if unchecked_hash:
        header += _UNCHECKED_HASH.to_bytes(4, "little")
        header += importlib.util.source_hash(source.read_bytes())
    else:
        status = source.stat()
        header += _TIMESTAMP.to_bytes(4, "little")
        header += (int(status.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
        header += (status.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    cached = Path(importlib.util.cache_from_source(str(source)))
    cached.parent.mkdir(exist_ok=True)
    cached.write_bytes(header + marshal.dumps(code))
    return cached
