"""``python -m plughost_runner``: the runner child process's entry point.

The host starts it; nobody else should. The per-spawn token arrives in the
``PLUGHOST_RUNNER_TOKEN`` environment variable, and over ``tcp://`` the CURVE
keys in ``PLUGHOST_CURVE_*``; all are removed from the environment before any
plugin code runs.
"""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import logging
import os
import sys

from plughost_runner.lifeline import bind_to_parent

TOKEN_VARIABLE = "PLUGHOST_RUNNER_TOKEN"
CURVE_VARIABLES = ("PLUGHOST_CURVE_SERVER", "PLUGHOST_CURVE_PUBLIC", "PLUGHOST_CURVE_SECRET")


def main(argv: list[str] | None = None) -> int:
    """Run a runner until the host stops it; return the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m plughost_runner",
        description="plughost runner: loads plugins and serves their tools to a host. "
        "Started by the host, not by hand.",
    )
    parser.add_argument("--endpoint", required=True, help="the host's ZeroMQ endpoint")
    parser.add_argument("--runner-id", required=True, help="this runner's id, for logs")
    parser.add_argument("--parent-pid", type=int, default=os.getppid(), help="exit when it dies")
    parser.add_argument(
        "--nice", type=int, default=0, help="lower this process's CPU priority by this much"
    )
    parser.add_argument("--sandbox", default="", help="the sandbox policy (JSON), from the host")
    args = parser.parse_args(argv)
    if args.nice > 0:
        os.nice(args.nice)
    if args.sandbox:
        # Before any thread exists (a user namespace refuses a threaded process) and before
        # any plugin code: see plughost_runner.sandbox.
        from plughost_runner.sandbox import SandboxError, SandboxPolicy, apply

        try:
            if apply(SandboxPolicy.from_json(args.sandbox)):
                args.parent_pid = os.getppid()  # 0: the parent is outside the pid namespace
        except (SandboxError, ValueError, TypeError) as exc:
            print(f"plughost runner: {exc}", file=sys.stderr)
            return 4
    # Imported only now, so that a runner started at a lower priority pays for its
    # heavy imports (pyzmq, pydantic) at that priority too.
    from plughost_runner.capture import LogCollector, StreamProxy
    from plughost_runner.service import RunnerService

    token = os.environ.pop(TOKEN_VARIABLE, "")
    keys = tuple(os.environ.pop(name, "") for name in CURVE_VARIABLES)
    curve = (keys[0], keys[1], keys[2]) if all(keys) else None
    bind_to_parent(args.parent_pid)
    faulthandler.enable(file=sys.__stderr__ or sys.stderr)
    collector = LogCollector()
    root = logging.getLogger()
    root.handlers[:] = [collector]
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)
    sys.stdout = StreamProxy(collector, "stdout", logging.INFO)
    sys.stderr = StreamProxy(collector, "stderr", logging.WARNING)
    service = RunnerService(args.endpoint, args.runner_id, token, collector, curve)
    return asyncio.run(service.run())


if __name__ == "__main__":
    sys.exit(main())
