"""The egress gate answers a runner it must not trust: bounded, and checked before believed.

A real gate on a real Unix socket; the "runner" is this test, sending what a
hostile plugin could send (it can reach the gate's socket from inside its
sandbox and write anything to it).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from plughost import egress
from plughost.destinations import Grants
from plughost.egress import EgressGate
from plughost.events import EventBus, LifecycleEvent
from tests.waiting import wait_until


@pytest.fixture
async def gate(tmp_path: Path) -> AsyncIterator[EgressGate]:
    events = EventBus()
    gate = EgressGate(
        tmp_path / "gate",
        Grants(["api.example.com"]),
        runner_id="runner-x",
        plugin_ids=["author.x"],
        events=events,
        pinned={"api.example.com": "203.0.113.7"},
    )
    await gate.start()
    try:
        yield gate
    finally:
        await gate.aclose()


async def _ask(gate: EgressGate, request: Any) -> dict[str, Any]:
    reader, writer = await asyncio.open_unix_connection(str(gate.path))
    try:
        writer.write(json.dumps(request).encode() + b"\n")
        await writer.drain()
        answer: dict[str, Any] = json.loads(await reader.readline())
        return answer
    finally:
        writer.close()


async def test_a_name_with_control_characters_is_refused_before_it_reaches_a_log(
    gate: EgressGate,
) -> None:
    seen: list[LifecycleEvent] = []
    gate._events.add_callback(seen.append)  # type: ignore[union-attr]

    answer = await _ask(gate, {"op": "resolve", "host": "evil.example\nplughost: all granted"})

    assert answer["ok"] is False and answer["errno"] == 22
    assert seen == [] and not gate.denied


async def test_a_granted_name_answers_its_real_addresses_and_others_are_refused(
    gate: EgressGate,
) -> None:
    granted = await _ask(gate, {"op": "resolve", "host": "API.example.com."})
    other = await _ask(gate, {"op": "resolve", "host": "other.example.net"})
    unknown_address = await _ask(gate, {"op": "connect", "address": "203.0.113.8", "port": 443})

    assert granted == {"ok": True, "addresses": ["203.0.113.7"]}
    assert other["ok"] is False and "plughost grant author.x other.example.net" in other["error"]
    assert unknown_address["ok"] is False


async def test_refusals_of_endless_distinct_names_are_counted_in_bounded_memory(
    gate: EgressGate, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(egress, "_MAX_KEYS", 8)

    for n in range(40):
        await _ask(gate, {"op": "resolve", "host": f"n{n}.example.net"})

    assert len(gate.denied) <= 9 and sum(gate.denied.values()) == 40
    assert len(gate._reported) <= 8


async def test_a_runner_holding_many_requests_open_is_cut_off_past_the_limit(
    gate: EgressGate,
) -> None:
    held = []
    for _ in range(egress._MAX_OPEN):
        held.append(await asyncio.open_unix_connection(str(gate.path)))
    await wait_until(lambda: gate._open == egress._MAX_OPEN, timeout=5, what="all accepted")
    try:
        reader, writer = await asyncio.open_unix_connection(str(gate.path))
        writer.write(b'{"op": "resolve", "host": "api.example.com"}\n')
        try:
            async with asyncio.timeout(5):
                cut_off = await reader.read()
        except ConnectionResetError:
            cut_off = b""
        writer.close()
    finally:
        for _, opened in held:
            opened.close()

    assert cut_off == b""


def test_the_gate_socket_is_the_owners_alone(gate: EgressGate) -> None:
    assert gate.path.stat().st_mode & 0o777 == 0o600
