"""runner_grouping = "single" never lets a plugin act as a neighbour that holds capabilities."""

from __future__ import annotations

from pathlib import Path

from plughost.runners.capabilities import CapabilityCall
from tests.conftest import TEST_PLUGINS, HostFactory, fast_settings

ECHO = TEST_PLUGINS / "echo"  # declares send.text and store.*
HOSTILE = TEST_PLUGINS / "hostile_grouped"


async def _impersonation(
    make_host: HostFactory, tmp_path: Path, *, group_all: bool
) -> tuple[list[CapabilityCall], str, set[str]]:
    settings = fast_settings(tmp_path).model_copy(
        update={"runner_grouping": "single", "group_capability_plugins": group_all}
    )
    sent: list[CapabilityCall] = []

    async def send_text(call: CapabilityCall) -> bool:
        sent.append(call)
        return True

    async with make_host([ECHO, HOSTILE], settings) as host:
        host.register_capability("send.text", send_text)
        result = await host.invoke("impersonate", {})
        runners = {r.runner_id for r in host.runners()}
    return sent, result.content, runners


async def test_a_plugin_with_capabilities_is_not_grouped_with_others_by_default(
    make_host: HostFactory, tmp_path: Path
) -> None:
    sent, outcome, runners = await _impersonation(make_host, tmp_path, group_all=False)

    assert runners == {"runner-all", "runner-tests-echo"}
    assert sent == []
    assert outcome != "sent"


async def test_grouping_plugins_with_capabilities_is_the_operators_choice_and_they_share_trust(
    make_host: HostFactory, tmp_path: Path
) -> None:
    sent, outcome, runners = await _impersonation(make_host, tmp_path, group_all=True)

    assert runners == {"runner-all"}
    assert outcome == "sent"  # documented: plugins sharing a runner can act as each other
    assert [(c.plugin_id, c.capability) for c in sent] == [("tests.echo", "send.text")]
