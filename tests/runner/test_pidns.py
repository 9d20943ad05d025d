"""The Python init of a forked runner's pid namespace, where the native one was not built.

Real processes: the test forks a stand-in init, which forks a runner that
ends at once; the init starts serving only once the runner is a zombie, the
case where no SIGCHLD is left to wake it.
"""

from __future__ import annotations

import os
import select
import signal
import struct

import pytest

from plughost_runner.sandbox import pidns


def test_the_python_init_reports_a_runner_that_ended_before_it_began_to_serve() -> None:
    if not hasattr(os, "pidfd_open"):
        pytest.skip("no pidfd_open on this platform")
    report_read, report_write = os.pipe()
    server = os.pidfd_open(os.getpid())  # the stand-in fork server: this test, alive
    init = os.fork()
    if init == 0:  # the stand-in init: only os-level calls, then _exit
        code = 1
        try:
            os.close(report_read)
            runner = os.fork()
            if runner == 0:
                os._exit(7)
            os.waitid(os.P_PID, runner, os.WEXITED | os.WNOWAIT)  # a zombie now, not reaped
            code = pidns._serve_adopted(runner, report_write, server)
        finally:
            os._exit(code)
    os.close(report_write)
    ready: list[int] = []
    try:
        ready, _, _ = select.select([report_read], [], [], 10.0)
        status = os.read(report_read, 4) if ready else b""
    finally:
        if not ready:
            os.kill(init, signal.SIGKILL)
        _, init_status = os.waitpid(init, 0)
        os.close(report_read)
        os.close(server)

    assert len(status) == 4, "the init never reported the runner's end"
    assert os.waitstatus_to_exitcode(struct.unpack("=i", status)[0]) == 7
    assert os.waitstatus_to_exitcode(init_status) == 7  # init ends as the runner did
