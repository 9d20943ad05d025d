"""Leaves an orphan behind: a shell starts ``sleep`` in the background and exits.

The ``sleep`` is then nobody's child in the runner, so the kernel hands it to
the init of the runner's pid namespace, which must reap it when it ends.
"""

from __future__ import annotations

import subprocess
from typing import Any

from plughost_sdk import Plugin, Tool


class Orphans(Plugin):
    @Tool("orphan_sleep", brief_description="Leave an orphaned sleep; return its pid in here")
    def orphan_sleep(self, **kwargs: Any) -> dict[str, Any]:
        shell = subprocess.run(
            ["sh", "-c", "sleep 1000 >/dev/null 2>&1 & echo $!"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        )
        return {"content": "orphaned", "pid": int(shell.stdout)}


def create_plugin() -> Orphans:
    return Orphans()
