"""A runner that speaks the protocol but lies in its answers, for fault-injection tests.

It is started by the host's own supervisor in place of ``python -m plughost_runner``
(tests swap ``plughost.runners.supervisor.runner_command`` for :func:`command`). It says
hello with the spawn's token, reports every plugin it is asked to load as loaded
with one tool, ``misbehave``, sends heartbeats, and answers each ``misbehave`` call
as its ``how`` argument asks:

- ``answer``: a correct reply whose content is the call's ``tag``;
- ``shifted``: a reply carrying another request's id (one the host never sent);
- ``duplicate``: two replies with the right id, the second with other content;
- ``bad_result``: a reply whose body is not a tool result;
- ``malformed_error``: an error reply whose error lacks the fields of the error shape;
- ``malformed_event``: a heartbeat event with a body of the wrong shape, then a correct reply.

It exits when asked to shut down, or when the process that started it is gone.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import zmq

from plughost.runners.spawn import runner_command
from plughost_sdk import Plugin, Tool, wire
from plughost_sdk.models import ToolExecutionResult
from plughost_sdk.types import ToolParameterInfo, ToolParamType

SCRIPT = Path(__file__).resolve()
TOOL = "misbehave"
SHIFT = 1_000_000_000
"""Added to a request id for ``shifted``: far past any id the host will use in a test."""


class _Declared(Plugin):
    """Only here to produce a valid tool declaration for the ready report."""

    @Tool(
        TOOL,
        brief_description="Answer the way the how argument asks",
        parameters=[
            ToolParameterInfo(name="how", param_type=ToolParamType.STRING),
            ToolParameterInfo(name="tag", param_type=ToolParamType.STRING, required=False),
        ],
    )
    async def misbehave(self, how: str, tag: str = "", **kwargs: Any) -> str:
        return tag


def command(endpoint: str, runner_id: str, nice: int = 0) -> list[str]:
    """``runner_command``'s argv (plughost.runners.spawn), starting this script instead."""
    real = runner_command(endpoint, runner_id, nice=nice)
    return [sys.executable, str(SCRIPT), *real[3:]]


def replacing(real: Callable[..., list[str]], plugin_id: str) -> Callable[..., list[str]]:
    """A ``runner_command`` that starts this fake runner for ``plugin_id``, ``real`` for others."""
    prefix = "runner-" + plugin_id.replace(".", "-")

    def runner_command(
        endpoint: str, runner_id: str, nice: int = 0, sandbox: str = ""
    ) -> list[str]:
        if runner_id.startswith(prefix):  # the fake is a test fixture: it runs unconfined
            return command(endpoint, runner_id, nice)
        return real(endpoint, runner_id, nice=nice, sandbox=sandbox)

    return runner_command


class FakeRunner:
    """One DEALER socket and a loop; every reply is chosen by the call's ``how``."""

    def __init__(self, endpoint: str, parent_pid: int) -> None:
        self._parent_pid = parent_pid
        self._context = zmq.Context()
        self._sock = self._context.socket(zmq.DEALER)
        self._sock.setsockopt(zmq.LINGER, 1000)
        self._sock.connect(endpoint)
        self._next_id = 0
        self._beats = 0
        self._heartbeat_interval = 0.5

    def run(self, token: str) -> int:
        """Hello, ready, then serve until told to stop; return the exit code."""
        hello = self._request(
            "runner.hello",
            {"token": token, "protocol": wire.PROTOCOL_VERSION, "pid": os.getpid()},
        )
        if hello["error"] is not None:
            return 3
        body = hello["body"] or {}
        self._heartbeat_interval = float(body.get("heartbeat_interval", 0.5))
        tools = [d.to_wire() for d in _Declared.tool_declarations()]
        loaded = [
            {"plugin_id": spec["plugin_id"], "path": spec["path"], "tools": tools}
            for spec in body.get("plugins", [])
        ]
        self._request("runner.ready", {"loaded": loaded, "failed": [], "pid": os.getpid()})
        return self._serve()

    def _serve(self) -> int:
        next_beat = time.monotonic()
        while os.getppid() == self._parent_pid:
            now = time.monotonic()
            if now >= next_beat:
                self._beat({"seq": self._beats, "inflight": 0, "stuck": 0})
                next_beat = now + self._heartbeat_interval
            if not self._sock.poll(max(1, int((next_beat - now) * 1000))):
                continue
            for envelope in wire.decode_many(self._sock.recv()):
                if self._answer(envelope):
                    return 0
        return 70

    def _answer(self, envelope: wire.Envelope) -> bool:
        """Answer one request from the host; True when it asked the runner to stop."""
        if envelope["kind"] != "request":
            return False
        if envelope["method"] == "runner.shutdown":
            self._send(wire.response(envelope, {"unload_problems": {}}))
            return True
        if envelope["method"] == "tool.invoke":
            self._misbehave(envelope)
        else:
            error = wire.error_body("bad_payload", f"fake runner: no {envelope['method']}")
            self._send(wire.response(envelope, error=error))
        return False

    def _misbehave(self, envelope: wire.Envelope) -> None:
        arguments = (envelope["body"] or {}).get("arguments") or {}
        how, tag = str(arguments.get("how", "answer")), str(arguments.get("tag", ""))
        if how == "shifted":
            self._send({**wire.response(envelope, _result(tag)), "id": envelope["id"] + SHIFT})
        elif how == "duplicate":
            self._send(wire.response(envelope, _result(tag)))
            self._send(wire.response(envelope, _result(f"duplicate of {tag}")))
        elif how == "bad_result":
            self._send(wire.response(envelope, {"result": "not a result"}))
        elif how == "malformed_error":
            self._send(wire.response(envelope, error={"code": "internal"}))  # type: ignore[typeddict-item]
        elif how == "malformed_event":
            self._beat(["not", "a", "map"])
            self._send(wire.response(envelope, _result(tag)))
        else:
            self._send(wire.response(envelope, _result(tag)))

    def _beat(self, body: Any) -> None:
        self._beats += 1
        self._send(wire.event("runner.heartbeat", body))

    def _request(self, method: wire.Method, body: Any) -> wire.Envelope:
        self._next_id += 1
        self._send(wire.request(self._next_id, method, body, deadline_ms=10_000))
        while True:
            if not self._sock.poll(10_000):
                raise TimeoutError(f"no answer to {method}")
            for reply in wire.decode_many(self._sock.recv()):
                if reply["kind"] == "response" and reply["id"] == self._next_id:
                    return reply

    def _send(self, envelope: Any) -> None:
        self._sock.send(wire.encode(envelope))

    def close(self) -> None:
        self._sock.close()
        self._context.term()


def _result(tag: str) -> dict[str, Any]:
    result = ToolExecutionResult(tool_name=TOOL, success=True, content=tag)
    return {"result": wire.result_to_wire(result)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--runner-id", required=True)
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--nice", type=int, default=0)  # accepted; a fake needs no priority
    parser.add_argument("--credentials-fd", type=int, required=True)
    args = parser.parse_args()
    with os.fdopen(args.credentials_fd, "rb") as credentials:
        token = str(json.loads(credentials.read())["token"])
    runner = FakeRunner(args.endpoint, args.parent_pid)
    try:
        return runner.run(token)
    finally:
        runner.close()


if __name__ == "__main__":
    sys.exit(main())
