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

from plughost_runner.process.credentials import make_undumpable, read_credentials
from plughost_runner.process.lifeline import bind_to_parent


@functools.cache
def parser() -> argparse.ArgumentParser:
    """The runner's command line, built once.

    The fork server builds it before it forks (argparse looks up message
    catalogues on the file system for every parser it makes), so that a forked
    runner only parses.
    """
    made = argparse.ArgumentParser(
        prog="python -m plughost_runner",
        description="plughost runner: loads plugins and serves their tools to a host. "
        "Started by the host, not by hand.",
    )
    made.add_argument("--endpoint", required=True, help="the host's ZeroMQ endpoint")
    made.add_argument("--runner-id", required=True, help="this runner's id, for logs")
    made.add_argument("--parent-pid", type=int, default=None, help="exit when it dies")
    made.add_argument(
        "--nice", type=int, default=0, help="lower this process's CPU priority by this much"
    )
    made.add_argument("--sandbox", default="", help="the sandbox policy (JSON), from the host")
    made.add_argument(
        "--credentials-fd", type=int, default=None, help="a pipe holding this runner's token"
    )
    made.add_argument(
        "--report-fd", type=int, default=None, help="the fork server's pipe: which pid is ours"
    )
    return made


def main(argv: list[str] | None = None) -> int:
    """Run a runner until the host stops it; return the exit code."""
    args = parser().parse_args(argv)
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
