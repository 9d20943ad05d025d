"""The runner's credentials: read once from a descriptor, kept out of reach of neighbours.

The host writes the runner's per-spawn token (and, over ``tcp://``, its CURVE
keys) to a pipe and hands the read end over (``--credentials-fd``). Nothing is
in the environment, so ``/proc/<pid>/environ`` shows no secret. Before reading
it the runner makes itself non-dumpable (``PR_SET_DUMPABLE`` 0): the kernel then
refuses ``/proc/<pid>/mem``, ``environ``, ``fd/`` and ptrace to processes of the
same user that lack ``CAP_SYS_PTRACE``, so another plugin's runner cannot read
this one's memory. (Root keeps that capability: running plugins as root needs the
operating-system sandbox on top.)

The token is held in a ``bytearray`` and zeroed once the hello is answered; the
host accepts it only once anyway, so a copy that survives elsewhere in memory
(the encoded hello frame) is worth nothing after the hello.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from dataclasses import dataclass

__all__ = ["Credentials", "make_undumpable", "read_credentials"]

_PR_SET_DUMPABLE = 4
_MAX_BYTES = 64 * 1024
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


@dataclass(slots=True)
class Credentials:
    """A runner's token (wiped after use) and CURVE keys, if any."""

    token: bytearray
    curve: tuple[str, str, str] | None = None

    def wipe(self) -> None:
        """Overwrite the token in place."""
        self.token[:] = bytes(len(self.token))


def make_undumpable() -> None:
    """Forbid core dumps and same-user reads of this process's memory (Linux)."""
    if _libc is not None:
        _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def read_credentials(fd: int | None) -> Credentials:
    """Read the credentials pipe to its end and close it; empty credentials without one."""
    if fd is None:
        return Credentials(bytearray())
    data = bytearray()
    try:
        while len(data) < _MAX_BYTES:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    try:
        payload = json.loads(data)
    except ValueError:
        payload = {}
    finally:
        data[:] = bytes(len(data))
    token = payload.get("token") if isinstance(payload, dict) else None
    curve = payload.get("curve") if isinstance(payload, dict) else None
    keys = tuple(str(key) for key in curve) if isinstance(curve, list) and len(curve) == 3 else None
    return Credentials(
        bytearray(str(token or "").encode()),
        (keys[0], keys[1], keys[2]) if keys else None,
    )
