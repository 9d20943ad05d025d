"""The runner keeps freed media buffers while it serves calls and returns them when idle."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or platform.libc_ver()[0] != "glibc",
    reason="the heap thresholds are glibc's mallopt; elsewhere the runner leaves malloc alone",
)

# Allocates and frees a 10 MB buffer the way a tool returning an image does, twenty
# times, and prints the minor page faults of the last ten rounds, then the resident
# memory before and after release_freed_memory().
_SCRIPT = """
import resource, sys
from plughost_runner.process import heap
if sys.argv[1] == "keep":
    assert heap.keep_freed_memory()
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for i in range(20):
    if i == 10:
        start = faults()
    data = b"\\x89PNG" + b"\\0" * 10_000_000
    del data
print(faults() - start)
before = rss()
heap.release_freed_memory()
print(before - rss())
"""


def _run(mode: str) -> tuple[int, int]:
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, mode], capture_output=True, text=True, check=True
    ).stdout.split()
    return int(out[0]), int(out[1])


def test_freed_buffers_are_reused_without_faulting_their_pages_in_again() -> None:
    kept_faults, released = _run("keep")
    default_faults, _ = _run("default")
    # Each fresh 10 MB buffer costs about 2,400 faults of 4 KiB pages.
    assert default_faults > 10_000
    assert kept_faults < 1_000
    # What was kept goes back to the kernel when the runner is idle.
    assert released >= 10_000_000


def test_the_fork_server_has_the_heaps_c_library_handle_before_it_forks() -> None:
    # Made in each forked runner instead, the handle cost every runner's start a dlopen.
    code = (
        "import ctypes, plughost_runner.forkserver\n"
        "from plughost_runner.process import heap\n"
        "print(isinstance(heap._libc, ctypes.CDLL))"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )

    assert found.stdout.strip() == "True"
