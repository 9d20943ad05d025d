"""Why a forked runner's pages are its own: compare them with the fork server's, page by page.

A runner forked from the fork server starts with every page shared. A page
becomes the runner's own (``Private_Dirty``) the first time the runner writes
to it, even to change one reference count and put it back. This module finds
those copied pages and says what changed in them:

- a page is *copied* when the runner and the fork server map it at the same
  address to different physical frames (``/proc/<pid>/pagemap``, which shows
  frame numbers to root only);
- its content is then compared word by word with the fork server's page
  (``/proc/<pid>/mem``): *identical* pages were written and restored (a
  reference count taken and dropped), others differ in a few words or many;
- each changed word is put down to the CPython object it lies in, by the
  nearest object header before it whose type is one of the interpreter's
  static types (code objects, strings, tuples, ...), where the interpreter's
  shared library and ``nm`` can name them.

Used by ``scripts/bench_idle.py``; runs only as root, on Linux.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_WORD = struct.Struct("<Q")
_FRAME_MASK = (1 << 55) - 1
_PRESENT = 1 << 63
_LOOKBACK = 64  # words before a changed one searched for its object's header
_KINDS = {
    "PyCode_Type": "code objects",
    "PyUnicode_Type": "strings",
    "PyTuple_Type": "tuples",
    "PyType_Type": "classes",
    "PyDict_Type": "dicts",
    "PyFunction_Type": "functions",
    "PyCell_Type": "cells",
    "PyBytes_Type": "bytes",
}


@dataclass
class CopiedPages:
    """What one runner wrote to of the fork server's pages."""

    copied: int = 0
    identical: int = 0
    one_word: int = 0
    few_words: int = 0  # 2 to 8
    many_words: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)  # pages holding a changed object


def available() -> str | None:
    """None if the comparison can run here, else why not."""
    if not Path("/proc/self/pagemap").exists():
        return "no /proc/<pid>/pagemap (not Linux)"
    if os.geteuid() != 0:
        return "page frame numbers are shown to root only"
    return None


def _writable_maps(pid: int) -> list[tuple[int, int, str]]:
    found = []
    for line in Path(f"/proc/{pid}/maps").read_text(encoding="ascii").splitlines():
        parts = line.split()
        low, high = (int(x, 16) for x in parts[0].split("-"))
        if "w" in parts[1]:
            found.append((low, high, parts[5] if len(parts) > 5 else ""))
    return found


def _frames(pagemap: int, low: int, high: int) -> list[int | None]:
    data = os.pread(pagemap, (high - low) // PAGE * 8, low // PAGE * 8)
    return [e & _FRAME_MASK if e & _PRESENT else None for (e,) in _WORD.iter_unpack(data)]


def _static_types(pid: int) -> dict[int, str]:
    """Address -> kind for the interpreter's static types, as mapped in ``pid``."""
    nm = shutil.which("nm")
    for line in Path(f"/proc/{pid}/maps").read_text(encoding="ascii").splitlines():
        parts = line.split()
        if len(parts) > 5 and "libpython" in parts[5] and int(parts[2], 16) == 0 and nm:
            base = int(parts[0].split("-")[0], 16)
            listed = subprocess.run([nm, "-D", parts[5]], capture_output=True, text=True)
            types = {}
            for symbol in listed.stdout.splitlines():
                fields = symbol.split()
                if len(fields) == 3 and fields[2] in _KINDS:
                    types[base + int(fields[0], 16)] = _KINDS[fields[2]]
            return types
    return {}


def compare(runner: int, server: int) -> CopiedPages:
    """The pages ``runner`` copied from ``server``, its parent, and what changed in them."""
    result = CopiedPages()
    types = _static_types(server)
    shared = {(low, high) for low, high, _ in _writable_maps(server)}
    fds = [
        os.open(f"/proc/{pid}/{name}", os.O_RDONLY)
        for pid in (runner, server)
        for name in ("pagemap", "mem")
    ]
    runner_map, runner_mem, server_map, server_mem = fds
    try:
        for low, high, _ in _writable_maps(runner):
            for s_low, s_high in shared:
                start, end = max(low, s_low), min(high, s_high)
                if start >= end:
                    continue
                mine, theirs = _frames(runner_map, start, end), _frames(server_map, start, end)
                for index, (a, b) in enumerate(zip(mine, theirs, strict=True)):
                    if a is None or b is None or a == b:
                        continue
                    address = start + index * PAGE
                    try:
                        new = os.pread(runner_mem, PAGE, address)
                        old = os.pread(server_mem, PAGE, address)
                    except OSError:
                        continue
                    _classify(result, new, old, types)
    finally:
        for fd in fds:
            os.close(fd)
    return result


def _classify(result: CopiedPages, new: bytes, old: bytes, types: dict[int, str]) -> None:
    result.copied += 1
    if new == old:
        result.identical += 1
        return
    count = len(new) // 8
    before = struct.unpack(f"<{count}Q", old)
    after = struct.unpack(f"<{count}Q", new)
    changed = [i for i in range(count) if before[i] != after[i]]
    if len(changed) == 1:
        result.one_word += 1
    elif len(changed) <= 8:
        result.few_words += 1
    else:
        result.many_words += 1
    kinds = set()
    for word in changed:
        for header in range(word + 1, max(0, word - _LOOKBACK), -1):
            if header < count and before[header] in types and before[header - 1] < 1 << 32:
                kinds.add(types[before[header]])
                break
    result.by_kind.update(kinds or {"other"})


def summary(samples: list[CopiedPages]) -> str:
    """One sentence for docs/benchmarks.md: the median runner's copied pages, by cause."""
    if not samples:
        return ""
    ordered = sorted(samples, key=lambda s: s.copied)
    median = ordered[len(ordered) // 2]
    total = max(median.copied, 1)

    def share(n: int) -> str:
        return f"{n / total:.0%}"

    kinds = ", ".join(
        f"{kind} {share(n)}" for kind, n in median.by_kind.most_common() if kind != "other"
    )
    return (
        f"Why a runner's pages are its own ({len(samples)} runners compared with the fork "
        f"server page by page, the median one): {median.copied} pages "
        f"({median.copied * PAGE / 2**20:.1f} MiB) copied from the fork server; "
        f"{share(median.identical)} of them identical to the fork server's (written and "
        f"restored, as a reference count taken and dropped), {share(median.one_word)} changed "
        f"in one 8-byte word, {share(median.few_words)} in 2 to 8, "
        f"{share(median.many_words)} in more. Pages holding a changed object, by kind: "
        f"{kinds or 'not named (no libpython symbols)'}. CPython "
        f"{sys.version_info.major}.{sys.version_info.minor} writes to every object it uses "
        "(reference counts; a code object's warm-up counters and specialised bytecode; "
        "a string's cached hash), so a forked runner copies each page it touches."
    )
