"""A runner reads its command line as argparse does, and the host's without argparse."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import pytest

from plughost.runners.spawn import runner_command
from plughost_runner import __main__ as runner_main

_POLICY = '{"user_namespace": true, "read": ["/srv/plugins/weather"]}'
_HOST_WRITTEN = [
    runner_command("ipc:///run/user/0/plughost/r.sock", "runner-weather")[3:],
    [*runner_command("tcp://10.0.0.2:5555", "runner-x", nice=5, sandbox=_POLICY)[3:]],
    # the fork server adds its descriptors and, outside a pid namespace, the parent
    [
        *runner_command("ipc:///r.sock", "runner-y", sandbox=_POLICY)[3:],
        *("--credentials-fd", "9", "--parent-pid", "1", "--report-fd", "12"),
    ],
]
_OTHERS = [
    ["--endpoint=ipc:///r.sock", "--runner-id", "r"],  # flag=value
    ["--end", "ipc:///r.sock", "--runner-id", "r"],  # an abbreviation argparse accepts
    ["--endpoint", "ipc:///r.sock", "--runner-id", "r", "--nice", "-3"],  # a negative number
    ["--endpoint", "ipc:///r.sock", "--runner-id", "r", "--nice", "+4"],
    ["--endpoint", "a", "--runner-id", "r", "--endpoint", "b"],  # the last one wins
    ["--endpoint", "ipc:///r.sock", "--runner-id", "r", "--nice", "x"],  # not a number
    ["--endpoint", "ipc:///r.sock"],  # a required flag missing
    ["--endpoint", "ipc:///r.sock", "--runner-id", "r", "--colour", "red"],  # unknown
    ["--endpoint", "--runner-id", "r"],  # a value missing
    ["--endpoint", "ipc:///r.sock", "--runner-id", "r", "--nice"],
    ["--endpoint", "ipc:///r.sock", "--", "--runner-id", "r"],
    [],
]


def _argparse_reads(argv: Sequence[str]) -> dict[str, object] | int:
    try:
        return vars(runner_main.parser().parse_args(argv))
    except SystemExit as exc:
        return int(exc.code or 0)


def _reads(argv: Sequence[str]) -> dict[str, object] | int:
    try:
        return vars(runner_main.read_command_line(argv))
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.mark.parametrize("argv", [*_HOST_WRITTEN, *_OTHERS])
def test_a_command_line_is_read_as_argparse_reads_it(argv: list[str]) -> None:
    assert _reads(argv) == _argparse_reads(argv)


@pytest.mark.parametrize("argv", _HOST_WRITTEN)
def test_the_command_lines_the_host_writes_are_read_without_argparse(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _argparse_reads(argv)
    assert isinstance(expected, dict)  # a command line argparse accepts

    def refuse(*args: object, **kwargs: object) -> argparse.Namespace:
        raise AssertionError("argparse was used")

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", refuse)
    assert vars(runner_main.read_command_line(argv)) == expected


def test_anything_else_goes_to_argparse_which_says_what_is_wrong(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        runner_main.read_command_line(["--endpoint", "ipc:///r.sock", "--nice", "x"])
    assert "--nice: invalid int value: 'x'" in capsys.readouterr().err
