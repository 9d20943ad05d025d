"""ServerStderr over an in-memory pipe: lines cut, escaped, tagged and counted."""

from __future__ import annotations

import logging

import anyio
import anyio.abc
import pytest

from plughost.events import shown
from plughost.mcp.server_stderr import MAX_LINE, WINDOW, WINDOW_LINES, ServerStderr


class _Pipe(anyio.abc.ByteReceiveStream):
    def __init__(self, *chunks: bytes) -> None:
        self._chunks = list(chunks)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self._chunks:
            raise anyio.EndOfStream
        return self._chunks.pop(0)

    async def aclose(self) -> None:
        self._chunks.clear()


def _messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "plughost.mcp.server_stderr"]


async def test_a_line_without_a_break_is_cut_into_lines_of_the_limit(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "plughost.mcp.server_stderr")
    long = b"x" * (MAX_LINE * 2 + 10)
    await ServerStderr("s").read(_Pipe(long[:5000], long[5000:], b"\nend"))
    assert [len(m) for m in _messages(caplog)] == [
        len("server=s: ") + n for n in (MAX_LINE, MAX_LINE, 10, 3)
    ]


async def test_an_escaped_line_is_still_cut_at_the_limit(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "plughost.mcp.server_stderr")
    await ServerStderr("s").read(_Pipe(b"\x1b" * MAX_LINE + b"\n"))
    (message,) = _messages(caplog)
    assert message == "server=s: " + r"\x1b" * (MAX_LINE // 4)


async def test_lines_past_the_windows_allowance_are_dropped_and_counted_once_a_window(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "plughost.mcp.server_stderr")
    now = [0.0]
    stderr = ServerStderr("s", clock=lambda: now[0])
    burst = b"line\n" * (WINDOW_LINES + 5)
    await stderr.read(_Pipe(burst))
    assert _messages(caplog)[-1].startswith("server=s: 5 lines of its stderr dropped")
    assert len(_messages(caplog)) == WINDOW_LINES + 1
    caplog.clear()
    now[0] = WINDOW  # a new window: a new allowance
    await stderr.read(_Pipe(b"again\n"))
    assert _messages(caplog) == ["server=s: again"]


async def test_the_servers_secrets_are_masked_even_when_a_line_arrives_in_pieces(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "plughost.mcp.server_stderr")
    secret = "ghp_0123456789abcdefXYZ"
    stderr = ServerStderr("s", secrets=[secret, "short"])  # too short to mask: ordinary text
    await stderr.read(_Pipe(b"token=" + secret[:7].encode(), secret[7:].encode() + b" short\n"))
    assert _messages(caplog) == ["server=s: token=[redacted] short"]


_SECRET = "ghp_0123456789abcdefXYZ"


async def _logged_with_secret(caplog: pytest.LogCaptureFixture, *chunks: bytes) -> list[str]:
    caplog.set_level(logging.WARNING, "plughost.mcp.server_stderr")
    await ServerStderr("s", secrets=[_SECRET]).read(_Pipe(*chunks))
    return _messages(caplog)


async def test_a_secret_the_cut_of_a_long_line_falls_inside_is_masked_not_halved(
    caplog: pytest.LogCaptureFixture,
) -> None:
    line = b"x" * (MAX_LINE - 5) + _SECRET.encode() + b" tail\n"
    (message,) = await _logged_with_secret(caplog, line)
    assert _SECRET[:5] not in message
    assert message.startswith("server=s: xxx")


async def test_a_secret_astride_the_cut_of_a_run_without_a_break_is_masked_whole(
    caplog: pytest.LogCaptureFixture,
) -> None:
    run = b"y" * (MAX_LINE - 5) + _SECRET.encode()
    more = b" and more" + b"z" * 100  # the run goes on well past the cut
    messages = await _logged_with_secret(caplog, run[: MAX_LINE + 2], run[MAX_LINE + 2 :], more)
    assert not any(_SECRET[:5] in m or _SECRET[-5:] in m for m in messages), messages
    assert "[redacted] and more" in "".join(messages)
    assert all(len(m) <= len("server=s: ") + MAX_LINE for m in messages)


async def test_each_line_of_a_secret_of_several_lines_is_masked_on_its_own(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "plughost.mcp.server_stderr")
    body = ["MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo", "4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onL"]
    pem = "\r\n".join(["-----BEGIN RSA PRIVATE KEY-----", *body, "-----END RSA PRIVATE KEY-----"])
    stderr = ServerStderr("s", secrets=[pem])
    await stderr.read(_Pipe(b"loaded key:\n" + pem.encode() + b"\n"))
    logged = "\n".join(_messages(caplog))
    assert not any(line in logged for line in body), logged
    assert "server=s: loaded key:" in logged


async def test_a_long_line_is_cut_before_its_characters_are_escaped(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.WARNING, "plughost.mcp.server_stderr")
    escaped: list[int] = []

    def counting(text: str) -> str:
        escaped.append(len(text))  # escaping costs time per character: a bounded few
        return shown(text)

    monkeypatch.setattr("plughost.mcp.server_stderr.shown", counting)
    await ServerStderr("s").read(_Pipe(b"\x1b" * (MAX_LINE * 16) + b"\n"))
    assert escaped == [MAX_LINE]
    assert _messages(caplog) == ["server=s: " + "\\x1b" * (MAX_LINE // 4)]
