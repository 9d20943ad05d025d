"""What a stdio upstream server writes to its stderr, logged as the host decides.

An upstream server is untrusted code, as a plugin is, and its stderr is as much
its own as a runner's: it may write a line that reads like one of serve's own
(``12:00:00 INFO    plughost.startup: sandbox: none``), terminal escape
sequences, or gigabytes. So its stderr is a pipe the host's loop reads, and each
line is logged by :class:`ServerStderr` under the host's rules:

- **Names.** Every line is logged by ``plughost.mcp.server_stderr`` at WARNING
  (a runner's stderr is logged at that level too) as ``server=NAME: LINE``; the
  name is the one the configuration gives the server, so a line can only ever
  read as that server's.
- **Characters.** Control characters and invisible formatting (``\\x1b``,
  ``\\r``, ``\\u202e``) are written out as escapes (:func:`plughost.events.shown`):
  nothing a server writes moves the cursor, recolours the terminal or starts a
  line of its own.
- **Size.** A line is cut at :data:`MAX_LINE` characters; a longer run without a
  line break is cut into lines of that length.
- **Secrets.** The values of the secret-looking variables of the environment the
  server is given (``API_KEY``, ``GITHUB_TOKEN``: names :data:`~plughost.redaction.SECRET_KEY`
  matches, the configuration's ``env`` among them) are masked as ``[redacted]``:
  a server that prints its configuration or a failed request with its key shows
  the operator the line, not the key. Each line of a secret of several lines (a
  PEM key) is masked on its own, as a server writes it. A line is masked before
  it is cut, and a run without a line break is cut before a secret, never inside
  one, so no cut shows part of a key.
- **Rate.** At most :data:`WINDOW_LINES` lines each :data:`WINDOW` seconds; the
  rest are dropped and counted, and the count is logged once when the window
  ends (or the pipe does). While the server is over its allowance the pipe is
  left unread for a moment, so a server writing in a loop blocks on its own
  full pipe instead of keeping the host's loop busy.

What does not live here: starting the process (:mod:`plughost.mcp.stdio`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

import anyio
import anyio.abc

from plughost.events import shown
from plughost.redaction import SecretRedactor
from plughost.secret_values import MIN_LENGTH

__all__ = ["MAX_LINE", "WINDOW", "WINDOW_LINES", "ServerStderr"]

log = logging.getLogger(__name__)

MAX_LINE = 4000
"""Characters kept of one line (the limit a runner's output lines have)."""
WINDOW = 10.0
"""Seconds of one rate window."""
WINDOW_LINES = 2000
"""Lines logged per window at most: 200 a second, as a runner's default output rate."""
_PAUSE = 0.05
"""Seconds the pipe is left unread while the server is over its allowance."""


class ServerStderr:
    """Logs the lines one upstream server writes to stderr, under its name and within bounds."""

    def __init__(
        self,
        server: str,
        clock: Callable[[], float] = time.monotonic,
        secrets: Iterable[str] = (),
    ) -> None:
        self._server = server
        self._redactor = SecretRedactor()
        # A line is masked alone: each line of a secret of several (a PEM key) is one too.
        pieces = {p.strip() for s in secrets for p in (s, *s.splitlines())}
        for piece in pieces:
            self._redactor.add(piece)
        # The ones a run without a line break can hold, for where to cut it.
        one_line = {p.encode() for p in pieces if len(p) >= MIN_LENGTH and len(p.splitlines()) == 1}
        self._secrets = sorted(one_line, key=len)
        # A run is held this much past the cut, so a secret astride it is seen whole.
        self._hold = len(self._secrets[-1]) - 1 if self._secrets else 0
        self._clock = clock
        self._window_start = clock()
        self._logged = 0
        self._dropped = 0
        self._ended = anyio.Event()
        self._reading = False

    async def read(self, stream: anyio.abc.ByteReceiveStream) -> None:
        """Log what arrives on ``stream`` until it ends (or the task is cancelled)."""
        self._reading = True
        partial = b""
        try:
            async for chunk in stream:
                *lines, partial = (partial + chunk).split(b"\n")
                while len(partial) > MAX_LINE + self._hold:  # no line break for a while: cut it
                    cut = self._cut(partial)
                    lines.append(partial[:cut])
                    partial = partial[cut:]
                if not self._log(lines):
                    await anyio.sleep(_PAUSE)  # leave the pipe full: the writer waits
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass  # the pipe went away with the process
        finally:
            if partial:
                self._log([partial])
            self._report_drops()
            self._ended.set()

    async def drained(self, timeout: float) -> None:
        """Wait up to ``timeout`` s for the pipe's end (a stopped server's last lines)."""
        if not self._reading:
            return
        with anyio.move_on_after(timeout):
            await self._ended.wait()

    def _cut(self, run: bytes) -> int:
        """Where to cut ``run``: at :data:`MAX_LINE`, or before a secret astride it."""
        cut = MAX_LINE
        moved = True
        while moved:  # a secret moved the cut; another may lie astride the new one
            moved = False
            for secret in self._secrets:
                start = run.find(secret, max(0, cut - len(secret) + 1), cut + len(secret) - 1)
                if 0 <= start < cut:
                    # One longer than a line is cut after, masked whole at the line's start.
                    cut = start if start > 0 else start + len(secret)
                    moved = start > 0
        return cut

    def _log(self, lines: list[bytes]) -> bool:
        """Log ``lines`` within the window's allowance; False if some were dropped."""
        now = self._clock()
        if now - self._window_start >= WINDOW:
            self._report_drops()
            self._window_start, self._logged = now, 0
        room = max(0, WINDOW_LINES - self._logged)
        for line in lines[:room]:
            # Masked whole, then cut before escaping: escaping costs time per character.
            text = self._redactor.redact(line.decode("utf-8", "replace").rstrip())
            text = shown(text[:MAX_LINE])
            log.warning("server=%s: %s", self._server, text[:MAX_LINE])
        self._logged += min(room, len(lines))
        self._dropped += max(0, len(lines) - room)
        return len(lines) <= room

    def _report_drops(self) -> None:
        if self._dropped:
            log.warning(
                "server=%s: %d lines of its stderr dropped: it wrote more than %d lines in %g s",
                self._server,
                self._dropped,
                WINDOW_LINES,
                WINDOW,
            )
            self._dropped = 0
