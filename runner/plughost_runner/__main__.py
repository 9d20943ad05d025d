"""``python -m plughost_runner``: the runner child process's entry point.

The host starts it; nobody else should. The process makes itself non-dumpable
first, then reads its per-spawn token (and over ``tcp://`` its CURVE keys) from
the pipe named by ``--credentials-fd`` (:mod:`plughost_runner.process.credentials`); no
credential is ever in its environment.
"""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import functools
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from plughost_runner.process.credentials import make_undumpable, read_credentials
from plughost_runner.process.lifeline import bind_to_parent


@dataclass(frozen=True, slots=True)
class _Option:
    """One option of the runner's command line: ``--flag VALUE``, a string or an int."""

    flag: str
    help: str
    kind: type[int] | type[str] = str
    default: int | str | None = None
    required: bool = False

    @property
    def dest(self) -> str:
        return self.flag[2:].replace("-", "_")


_OPTIONS: Final = (
    _Option("--endpoint", "the host's ZeroMQ endpoint", required=True),
    _Option("--runner-id", "this runner's id, for logs", required=True),
    _Option("--parent-pid", "exit when it dies", int),
    _Option("--nice", "lower this process's CPU priority by this much", int, 0),
    _Option("--sandbox", "the sandbox policy (JSON), from the host", default=""),
    _Option("--credentials-fd", "a pipe holding this runner's token", int),
    _Option("--report-fd", "the fork server's pipe: which pid is ours", int),
)
_BY_FLAG: Final = {option.flag: option for option in _OPTIONS}


@functools.cache
def parser() -> argparse.ArgumentParser:
    """The runner's command line as argparse reads it, built once, when first needed.

    A forked runner reads the host's command line without it
    (:func:`read_command_line`); this parser reads anything else, and ``--help``.
    """
    made = argparse.ArgumentParser(
        prog="python -m plughost_runner",
        description="plughost runner: loads plugins and serves their tools to a host. "
        "Started by the host, not by hand.",
    )
    for option in _OPTIONS:
        made.add_argument(
            option.flag,
            type=option.kind,
            default=option.default,
            required=option.required,
            help=option.help,
        )
    return made


def read_command_line(argv: Sequence[str]) -> argparse.Namespace:
    """``argv`` read as :func:`parser` reads it.

    The host writes a runner's command line as ``--flag value`` pairs, each
    flag in full: those are read here without argparse, whose code a forked
    runner would otherwise run once, writing to (and so copying from the fork
    server) pages that nothing else in it touches: about 100 KiB a runner. Anything
    else (an abbreviated or unknown flag, ``--flag=value``, a value that looks
    like a flag, a bad number, a missing required flag, ``--help``) is left to
    argparse, which accepts what it accepts and says what is wrong with the rest.
    """
    values: dict[str, int | str | None] = {option.dest: option.default for option in _OPTIONS}
    given: set[str] = set()
    if len(argv) % 2 == 0:
        for flag, text in zip(argv[::2], argv[1::2], strict=True):
            option = _BY_FLAG.get(flag)
            if option is None or text.startswith("-"):
                break
            try:
                values[option.dest] = option.kind(text)
            except ValueError:
                break
            given.add(option.flag)
        else:
            if all(option.flag in given for option in _OPTIONS if option.required):
                return argparse.Namespace(**values)
    return parser().parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run a runner until the host stops it; return the exit code."""
    args = read_command_line(sys.argv[1:] if argv is None else argv)
    if args.parent_pid is None:  # the default is read now: the parser outlives one process
        args.parent_pid = os.getppid()
    make_undumpable()
    credentials = read_credentials(args.credentials_fd)
    if args.nice > 0:
        os.nice(args.nice)
    if args.sandbox:
        # Before any thread exists (a user namespace refuses a threaded process) and before
        # any plugin code: see plughost_runner.sandbox.
        from plughost_runner.sandbox import SandboxError, SandboxPolicy, apply

        try:
            socket = args.endpoint[len("ipc://") :] if args.endpoint.startswith("ipc://") else ""
            policy = SandboxPolicy.from_json(args.sandbox)
            if apply(policy, socket, args.report_fd):
                args.parent_pid = os.getppid()  # 1: its pid namespace's init
                args.report_fd = None  # the split told the fork server which pid to know
            from plughost_runner.process.limits import note_sandbox

            note_sandbox(policy.write, policy.file_size)
        except (SandboxError, ValueError, TypeError) as exc:
            print(f"plughost runner: {exc}", file=sys.stderr)
            return 4
    if args.report_fd is not None:  # no pid namespace: this process is the one to know
        from plughost_runner.sandbox.pidns import announce

        announce(args.report_fd)
    # Imported only now, so that a runner started at a lower priority pays for its
    # heavy imports (pyzmq, pydantic) at that priority too.
    from plughost_runner.process.capture import LogCollector, StreamProxy
    from plughost_runner.process.heap import keep_freed_memory
    from plughost_runner.service import RunnerService

    keep_freed_memory()
    bind_to_parent(args.parent_pid)
    faulthandler.enable(file=sys.__stderr__ or sys.stderr)
    collector = LogCollector()
    root = logging.getLogger()
    root.handlers[:] = [collector]
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)
    sys.stdout = StreamProxy(collector, "stdout", logging.INFO)
    sys.stderr = StreamProxy(collector, "stderr", logging.WARNING)
    service = RunnerService(args.endpoint, args.runner_id, credentials, collector)
    return asyncio.run(service.run())


if __name__ == "__main__":
    sys.exit(main())
