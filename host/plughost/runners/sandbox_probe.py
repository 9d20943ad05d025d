"""Ask the kernel which protections this user gets: the sandbox probe and its answer.

The probe is ``python -m plughost_runner.sandbox``, which tries each protection
in a throw-away child and prints what worked. It lives apart from
:mod:`plughost.runners.sandbox` because a one-shot command starts it before the
host's modules are imported (:mod:`plughost.runners.early`): this module
imports no settings and no pydantic, so the probe's interpreter starts at
once and works beside the command's own imports instead of after them.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SandboxSupport", "probe_support"]

_PROBE_TIMEOUT = 20.0

_ANSWERS: dict[tuple[str, tuple[tuple[str, str], ...] | None], SandboxSupport] = {}
"""The kernel's answers so far, by interpreter and environment (see :func:`probe_support`)."""


@dataclass(frozen=True, slots=True)
class SandboxSupport:
    """What the kernel grants this user, as the probe found it.

    Attributes:
        offered: The protections that worked.
        reasons: Why each of the others did not, by protection.
        landlock_abi: The kernel's Landlock ABI version (0: none).
        failure: Why the probe itself gave no answer (then nothing is offered).
    """

    offered: frozenset[str]
    reasons: Mapping[str, str] = field(default_factory=dict)
    landlock_abi: int = 0
    failure: str = ""

    @classmethod
    def from_probe(cls, data: Mapping[str, Any]) -> SandboxSupport:
        """Read the probe's JSON answer."""
        return cls(
            frozenset(str(p) for p in data.get("offered", [])),
            {str(k): str(v) for k, v in dict(data.get("reasons", {})).items()},
            int(data.get("landlock_abi", 0)),
        )


async def probe_support(
    python: str | None = None, env: Mapping[str, str] | None = None, *, fresh: bool = False
) -> SandboxSupport:
    """Ask the kernel which protections this user gets (about 0.15 s of CPU, once).

    Once per process for each interpreter and environment: what the kernel
    grants a user changes only when the system's configuration does (a sysctl,
    a container's profile), and a program that makes hosts again and again (an
    embedding bot reloading its settings) would otherwise start an interpreter
    each time to learn the same answer.
    ``fresh`` asks again (and keeps the new answer). A probe that cannot run
    (no runner installed for ``python``, a timeout) means nothing is offered,
    with that reason, and is not kept: the next host asks again.
    """
    if not sys.platform.startswith("linux"):  # the probe's system calls are Linux's
        failure = f"the sandbox needs Linux; this is {sys.platform}"
        return SandboxSupport(frozenset(), failure=failure)
    key = (python or sys.executable, None if env is None else tuple(sorted(env.items())))
    known = _ANSWERS.get(key)
    if known is not None and not fresh:
        return known
    support = await _probe(key[0], env)
    if not support.failure:
        _ANSWERS[key] = support
    return support


async def _probe(python: str, env: Mapping[str, str] | None) -> SandboxSupport:
    """Run the probe's interpreter and read its answer."""
    command = [python, "-m", "plughost_runner.sandbox"]
    try:
        # subprocess.run in a thread: a fork waited for on the loop stalls it (see
        # plughost.runners.child_process), and the probe is short-lived.
        done = await asyncio.to_thread(
            subprocess.run,
            command,
            env=dict(env) if env is not None else None,
            capture_output=True,
            timeout=_PROBE_TIMEOUT,
            check=False,
        )
        answer = json.loads(done.stdout.decode() or "{}")
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return SandboxSupport(frozenset(), failure=f"the sandbox probe failed: {exc}")
    if done.returncode != 0 or not isinstance(answer, dict):
        stderr = done.stderr.decode(errors="replace")[-300:]
        return SandboxSupport(frozenset(), failure=f"the sandbox probe failed: {stderr}")
    return SandboxSupport.from_probe(answer)
