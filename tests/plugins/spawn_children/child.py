"""A process a plugin leaves behind: it records its pid in a folder, then sleeps.

``python child.py ROLE PID_DIR MARKER``; MARKER only makes the process easy to
find by its command line. Roles: ``parent`` starts a ``grandchild`` (both stay
in the runner's process group); ``escape`` double-forks into a new session, so
the process it leaves (``escaped``) is outside the runner's process group.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


def main() -> None:
    role, pid_dir, marker = sys.argv[1:4]
    if role == "escape":
        if os.fork():
            os._exit(0)
        os.setsid()
        if os.fork():
            os._exit(0)
        role = "escaped"
    if role == "parent":
        subprocess.Popen([sys.executable, __file__, "grandchild", pid_dir, marker])
    (Path(pid_dir) / f"{role}.{os.getpid()}").touch()
    time.sleep(1000)


if __name__ == "__main__":
    main()
