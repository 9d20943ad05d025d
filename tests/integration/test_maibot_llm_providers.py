"""A MaiBot ``@LLMProvider`` plugin answers ``llm.*`` in real runners, after the embedder."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from plughost.dispatch.llm_providers import NoProviderError
from plughost.host import PluginHost
from plughost.runners.capabilities import CapabilityCall
from plughost.settings import LLMSettings
from tests.conftest import TEST_PLUGINS, fast_settings

PROVIDER = "community.echo-llm"
Start = Callable[..., AbstractAsyncContextManager[PluginHost]]


@pytest.fixture
def start(tmp_path: Path) -> Start:
    """A host over the echo provider and the asking plugin, with ``[host.llm]`` as given."""
    for name in ("echo_llm_provider", "llm_asker"):
        shutil.copytree(TEST_PLUGINS / "maibot" / name, tmp_path / "plugins" / name)

    @asynccontextmanager
    async def run(**llm: Any) -> AsyncIterator[PluginHost]:
        settings = fast_settings(tmp_path)
        settings.llm = LLMSettings(**llm)
        host = PluginHost([tmp_path / "plugins"], settings=settings)
        try:
            await host.start()
            yield host
        finally:
            await host.aclose()

    return run


async def _ask(host: PluginHost, question: str, model: str = "") -> str:
    result = await host.invoke("ask_model", {"question": question, "model": model})
    assert result.success, result.error_message
    return str(result.content)


async def test_the_chosen_provider_answers_another_plugins_llm_generate(start: Start) -> None:
    async with start(provider=PROVIDER) as host:
        answer = await _ask(host, "你好", model="utils")
        direct = await host.dispatcher.llm.call("llm.generate", {"prompt": "嗨", "model": "m1"})
        listed = [c.to_wire() for c in host.components.components("LLM_PROVIDER")]

    assert answer == "True|回声: 你好|"
    assert direct == {
        "success": True,
        "response": "回声: 嗨",
        "reasoning": "model=m1",
        "model_name": "m1",
        "prompt_tokens": 1,
        "completion_tokens": 5,
        "total_tokens": 0,
        "prompt_cache_hit_tokens": 0,
        "prompt_cache_miss_tokens": 0,
    }
    assert listed == [
        {
            "name": "echo",
            "type": "LLM_PROVIDER",
            "metadata": {
                "handler_name": "provide_echo",
                "client_type": "echo",
                "description": "回声模型",
                "version": "1.1.0",
                "display_name": "Echo",
            },
        }
    ]


async def test_tools_and_embeddings_go_through_the_provider_too(start: Start) -> None:
    async with start(provider=f"{PROVIDER}:echo") as host:
        with_tools = await host.invoke("ask_with_tools", {"question": "查一下"})
        embedded = await host.invoke("embed_text", {"text": "四个字符"})

    assert with_tools.content == "回声: 查一下|lookup"
    assert embedded.content == "[4.0, 1.0]"


async def test_a_provider_that_raises_or_answers_garbage_is_a_failed_reply_naming_it(
    start: Start,
) -> None:
    async with start(provider=PROVIDER) as host:
        raised = await _ask(host, "boom")
        garbage = await host.dispatcher.llm.call("llm.generate", {"prompt": "not a dict"})

    assert raised.startswith(f"False|None|LLM provider echo of plugin {PROVIDER} failed: ")
    assert "RuntimeError: 上游模型不可用" in raised
    assert garbage == {
        "success": False,
        "error": f"LLM provider echo of plugin {PROVIDER} returned str, not a response dict",
    }


async def test_models_map_a_named_model_to_a_provider_and_others_find_none(
    start: Start,
) -> None:
    async with start(models={"echo-model": PROVIDER}) as host:
        mapped = await _ask(host, "映射", model="echo-model")
        other = await host.invoke("ask_model", {"question": "别的", "model": "gpt"})
        with pytest.raises(NoProviderError, match=r"no LLM provider is chosen; set \[host.llm\]"):
            await host.dispatcher.llm.call("llm.generate", {"prompt": "x"})

    assert mapped == "True|回声: 映射|"
    assert not other.success
    assert "no model can answer here" in str(other.error_message)


async def test_a_chosen_provider_that_is_not_loaded_is_named_in_the_error(start: Start) -> None:
    async with start(provider="community.missing:gpt") as host:
        result = await host.invoke("ask_model", {"question": "在吗", "model": ""})

    assert not result.success
    assert "the LLM provider 'community.missing:gpt' chosen in [host.llm] is not loaded" in str(
        result.error_message
    )


async def test_the_embedders_llm_handler_wins_over_the_provider_and_the_hosts_default(
    start: Start,
) -> None:
    seen: list[str] = []

    async def embedder_model(call: CapabilityCall) -> dict[str, Any]:
        seen.append(call.capability)
        return {"success": True, "response": f"embedder: {call.args['prompt']}"}

    async with start(provider=PROVIDER) as host:
        host.register_capability("llm.*", embedder_model)
        wildcard = await _ask(host, "谁来答")
        host.capabilities.unregister("llm.*")
        after = await _ask(host, "谁来答")

    assert wildcard == "True|embedder: 谁来答|"
    assert seen == ["llm.generate"]
    assert after == "True|回声: 谁来答|"


async def test_without_a_provider_or_handler_llm_generate_falls_back_to_client_sampling(
    start: Start,
) -> None:
    async with start() as host:
        result = await host.invoke("ask_model", {"question": "有人吗", "model": ""})

    assert not result.success
    assert "did not come from an MCP client (which could answer through sampling)" in str(
        result.error_message
    )
