"""The embedder's capability handlers answer before the host's own fallbacks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from plughost.runners.capabilities import CapabilityCall, CapabilityRouter
from plughost.runners.channel import RemoteError


@dataclass(frozen=True)
class Manifest:
    id: str = "p"

    def allows_capability(self, capability: str) -> bool:
        return True


@dataclass(frozen=True)
class Bare(Manifest):
    """A plugin whose manifest lists no capability."""

    def allows_capability(self, capability: str) -> bool:
        return False


def _answering(label: str) -> Any:
    async def handler(call: CapabilityCall) -> str:
        return f"{label}:{call.capability}"

    return handler


async def test_an_embedders_wildcard_wins_over_the_hosts_exact_fallback() -> None:
    router = CapabilityRouter()
    router.register("llm.generate", _answering("host"), fallback=True)
    router.register("llm.*", _answering("embedder"))

    answer = await router.dispatch(Manifest(), "llm.generate", {})

    assert answer == {"value": "embedder:llm.generate"}


async def test_the_hosts_fallback_answers_again_once_the_embedder_unregisters() -> None:
    router = CapabilityRouter()
    router.register("llm.*", _answering("host"), fallback=True)
    router.register("llm.generate", _answering("embedder"))
    router.unregister("llm.generate")

    answer = await router.dispatch(Manifest(), "llm.generate", {})

    assert answer == {"value": "host:llm.generate"}
    assert router.provided() == ["llm.*"]


async def test_among_fallbacks_the_exact_name_beats_the_group() -> None:
    router = CapabilityRouter()
    router.register("llm.*", _answering("group"), fallback=True)
    router.register("llm.embed", _answering("exact"), fallback=True)

    assert await router.dispatch(Manifest(), "llm.embed", {}) == {"value": "exact:llm.embed"}
    assert await router.dispatch(Manifest(), "llm.x", {}) == {"value": "group:llm.x"}


async def test_unregistering_an_embedder_name_keeps_a_fallbacks_manifest_exemption() -> None:
    router = CapabilityRouter()

    router.register("api.replace_dynamic", _answering("host"), needs_manifest=False, fallback=True)
    router.unregister("api.replace_dynamic")
    answer = await router.dispatch(Bare(), "api.replace_dynamic", {})
    with pytest.raises(RemoteError):
        await router.dispatch(Bare(), "api.other", {})

    assert answer == {"value": "host:api.replace_dynamic"}


async def test_a_fallbacks_manifest_exemption_returns_once_the_embedders_handler_is_gone() -> None:
    router = CapabilityRouter()

    router.register("api.replace_dynamic", _answering("host"), needs_manifest=False, fallback=True)
    router.register("api.replace_dynamic", _answering("embedder"))
    with pytest.raises(RemoteError, match="may not call"):
        await router.dispatch(Bare(), "api.replace_dynamic", {})
    router.unregister("api.replace_dynamic")

    answer = await router.dispatch(Bare(), "api.replace_dynamic", {})

    assert answer == {"value": "host:api.replace_dynamic"}
