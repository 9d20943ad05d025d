"""Runner sockets fit a Unix socket path whatever TMPDIR and the runner id are."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import zmq

from plughost.runners.spawn import SocketDirectory


@pytest.fixture
def deep_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    deep = tmp_path / ("deep" * 30)
    deep.mkdir()
    monkeypatch.setenv("TMPDIR", str(deep))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    return deep


def test_a_deep_tmpdir_and_a_long_runner_id_still_give_a_socket_that_binds(
    deep_tmpdir: Path,
) -> None:
    sockets = SocketDirectory()
    runner_id = "runner-" + "community.a-plugin-with-a-very-long-id" * 3 + "-12"
    endpoint = sockets.endpoint(runner_id)
    try:
        assert deep_tmpdir not in sockets.path.parents
        context = zmq.Context.instance()
        socket = context.socket(zmq.ROUTER)
        try:
            socket.bind(endpoint)  # raises past the socket path limit
            sockets.secure(runner_id)
            assert Path(endpoint.removeprefix("ipc://")).stat().st_mode & 0o777 == 0o600
        finally:
            socket.close(linger=0)
    finally:
        sockets.remove()


def test_two_long_runner_ids_that_share_a_prefix_get_different_sockets(
    deep_tmpdir: Path,
) -> None:
    sockets = SocketDirectory()
    try:
        prefix = "runner-" + "x" * 60
        assert sockets.endpoint(prefix + "-1") != sockets.endpoint(prefix + "-2")
    finally:
        sockets.remove()


def test_a_short_tmpdir_is_used_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    with tempfile.TemporaryDirectory(prefix="s", dir="/tmp") as short:
        monkeypatch.setenv("TMPDIR", short)
        monkeypatch.setattr(tempfile, "tempdir", None)
        sockets = SocketDirectory()
        try:
            assert sockets.path.parent == Path(short)
            assert sockets.endpoint("runner-a") == f"ipc://{sockets.path}/runner-a.sock"
        finally:
            sockets.remove()
