"""WarmStart: the catalogue while the host starts, the registry once it is live."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from plughost.mcp.catalogue import ToolCatalogue
from plughost.mcp.status import ServerState, ServerStatus
from plughost.mcp.warm_start import WarmStart
from plughost.tools.provider import ChangeListener, ToolProvider
from plughost.tools.resources import ContentCatalog, ResourceInfo
from plughost_sdk.models import ToolExecutionResult, ToolInvocation, ToolSpec

PRINTS = {"host": "h", "plugin:p": "1"}


def tool(name: str) -> ToolSpec:
    return ToolSpec(name=name, provider_type="plugin", metadata={"plugin_id": "p"})


class Registry:
    """The part of a ToolRegistry WarmStart uses, with a tool list the test sets."""

    def __init__(self, *names: str) -> None:
        self.specs = [tool(name) for name in names]
        self.listeners: list[ChangeListener] = []
        self.own: tuple[Any, ...] = ()

    async def list_tools(self) -> list[ToolSpec]:
        return list(self.specs)

    async def invoke(
        self, invocation: ToolInvocation, *args: Any, **kw: Any
    ) -> ToolExecutionResult:
        return ToolExecutionResult(tool_name=invocation.tool_name, content="ran")

    def add_listener(self, listener: ChangeListener) -> None:
        self.listeners.append(listener)

    def remove_listener(self, listener: ChangeListener) -> None:
        self.listeners.remove(listener)

    def changed(self, *names: str, provider: str = "plugins") -> None:
        self.specs = [tool(name) for name in names]
        for listener in list(self.listeners):
            listener(provider)

    @property
    def providers(self) -> tuple[ToolProvider, ...]:
        return self.own

    def add_resource_listener(self, listener: Callable[[str], None]) -> None: ...

    def remove_resource_listener(self, listener: Callable[[str], None]) -> None: ...


async def warm(tmp_path: Path, registry: Registry, *saved: str, timeout: float = 30) -> WarmStart:
    catalogue = ToolCatalogue(tmp_path / "tool-catalogue.json")
    if saved:
        catalogue.save([tool(name) for name in saved], PRINTS)
    source = WarmStart(registry, catalogue, lambda: PRINTS, call_timeout=timeout)
    await source.load()
    return source


async def names(source: WarmStart) -> list[str]:
    return [spec.name for spec in await source.list_tools()]


async def test_tools_list_answers_the_catalogue_until_live_then_the_registry(
    tmp_path: Path,
) -> None:
    source = await warm(tmp_path, Registry("new"), "old")

    before = await names(source)
    await source.go_live()

    assert before == ["old"]
    assert await names(source) == ["new"]


async def test_with_no_catalogue_tools_list_waits_for_the_live_list(tmp_path: Path) -> None:
    source = await warm(tmp_path, Registry("live"))
    with anyio.fail_after(10):
        listing = asyncio.ensure_future(names(source))
        await source.go_live()
        assert await listing == ["live"]


async def test_a_call_during_start_up_waits_for_the_host_and_runs(tmp_path: Path) -> None:
    source = await warm(tmp_path, Registry("a"), "a")
    with anyio.fail_after(10):
        call = asyncio.ensure_future(source.invoke(ToolInvocation(tool_name="a")))
        await asyncio.sleep(0)  # the call is waiting now: nothing else can let it run
        assert not call.done()
        await source.go_live()
        assert (await call).content == "ran"


async def test_a_call_that_outlasts_the_call_timeout_says_the_host_is_starting(
    tmp_path: Path,
) -> None:
    source = await warm(tmp_path, Registry("a"), "a", timeout=0.01)

    result = await source.invoke(ToolInvocation(tool_name="a"))

    assert result.error_code == "timeout"
    assert "still starting" in result.error_message


@pytest.mark.parametrize(("live", "told"), [(("a",), False), (("a", "b"), True)])
async def test_clients_hear_of_a_change_only_when_the_live_list_differs(
    tmp_path: Path, live: tuple[str, ...], told: bool
) -> None:
    source = await warm(tmp_path, Registry(*live), "a")
    heard: list[str] = []
    source.add_listener(heard.append)

    await source.list_tools()
    await source.go_live()

    assert bool(heard) is told


class Watched(ToolCatalogue):
    """A catalogue that says when it was saved."""

    saved = asyncio.Event()

    def save(self, specs: list[ToolSpec], fingerprints: Mapping[str, str]) -> None:
        super().save(specs, fingerprints)
        self.saved.set()


async def test_the_catalogue_is_saved_live_and_again_after_each_change(tmp_path: Path) -> None:
    registry = Registry("a")
    catalogue = Watched(tmp_path / "tool-catalogue.json")
    catalogue.saved = asyncio.Event()
    source = WarmStart(registry, catalogue, lambda: PRINTS, call_timeout=30)
    await source.go_live()
    first = [s.name for s in catalogue.load(PRINTS) or []]
    catalogue.saved.clear()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            registry.changed("a", "b")  # heard since go_live, saved by keep_saved
            group.start_soon(source.keep_saved)
            await catalogue.saved.wait()
            group.cancel_scope.cancel()

    assert first == ["a"]
    assert [s.name for s in catalogue.load(PRINTS) or []] == ["a", "b"]


class Resources:
    """A content provider with one resource, and an upstream's provider type."""

    provider_name = "mcp"
    provider_type = "mcp"

    async def list_resources(self) -> list[ResourceInfo]:
        return [ResourceInfo(uri="test://a", name="a")]

    async def read_resource(self, uri: str) -> list[Any]:
        return []

    async def list_prompts(self) -> list[Any]:
        return []

    async def get_prompt(self, name: str, arguments: Any) -> Any:
        raise AssertionError("not asked")

    async def complete(self, *args: Any) -> list[str]:
        return []


async def test_resources_asked_for_while_starting_are_answered_once_live(tmp_path: Path) -> None:
    registry = Registry("a")
    registry.own = (Resources(),)
    source = await warm(tmp_path, registry, "a")
    catalog = ContentCatalog(source)

    with anyio.fail_after(10):
        listing = asyncio.ensure_future(catalog.list_resources())
        await asyncio.sleep(0)  # the listing is waiting now: nothing else can let it run
        assert not listing.done()
        await source.go_live()
        resources = await listing

    assert [r.uri for r in resources] == ["test://a"]


async def test_changes_while_starting_are_not_told_but_changes_once_live_are(
    tmp_path: Path,
) -> None:
    registry = Registry("a")
    source = await warm(tmp_path, registry, "a")
    heard: list[str] = []
    source.add_listener(heard.append)

    registry.changed("a", provider="plugins")  # a runner loaded during start-up
    await source.go_live()
    registry.changed("a", "b", provider="plugins")  # a reload

    assert heard == ["plugins"]


async def test_an_upstream_that_changed_its_list_while_serving_makes_the_next_start_cold(
    tmp_path: Path,
) -> None:
    registry = Registry("a")
    registry.own = (Resources(),)
    catalogue = Watched(tmp_path / "tool-catalogue.json")
    catalogue.saved = asyncio.Event()
    prints = {**PRINTS, "mcp:everything": "e1"}
    source = WarmStart(registry, catalogue, lambda: prints, call_timeout=30)
    await source.go_live()
    assert catalogue.load(prints) is not None
    catalogue.saved.clear()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            registry.changed("a", "b", provider="mcp")
            group.start_soon(source.keep_saved)
            await catalogue.saved.wait()
            group.cancel_scope.cancel()

    assert catalogue.load(prints) is None


class Routing(Registry):
    """A registry that can already route its tools while the host starts."""

    async def has_tool(self, name: str) -> bool:
        return name in {spec.name for spec in self.specs}


async def test_a_call_the_starting_registry_can_route_runs_before_live(tmp_path: Path) -> None:
    source = await warm(tmp_path, Routing("up"), "up")

    result = await source.invoke(ToolInvocation(tool_name="up"))

    assert result.content == "ran"
    assert not source.live.is_set()


async def test_the_loop_keeps_running_while_the_plugin_folders_are_digested(
    tmp_path: Path,
) -> None:
    loop = asyncio.get_running_loop()
    digesting, released = asyncio.Event(), threading.Event()
    answered: list[bool] = []

    def fingerprints() -> Mapping[str, str]:
        # Signals the loop, then holds until a coroutine on that loop answers: a
        # digest run on the loop itself would wait here for nothing.
        loop.call_soon_threadsafe(digesting.set)
        answered.append(released.wait(timeout=10))
        return PRINTS

    catalogue = ToolCatalogue(tmp_path / "tool-catalogue.json")
    catalogue.save([tool("a")], PRINTS)
    source = WarmStart(Registry("a"), catalogue, fingerprints, call_timeout=30)

    async def answer() -> None:
        await digesting.wait()
        released.set()

    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:
            group.start_soon(answer)
            await source.load()

    assert answered == [True]
    assert await names(source) == ["a"]


class Starting(Registry):
    """A starting registry whose ready tools route each name to the spec the test set."""

    def __init__(self, *names: str, routed: ToolSpec | None) -> None:
        super().__init__(*names)
        self.routed = routed
        self.ran: list[bool] = []  # ready_only, per call that ran

    async def get_tool_spec(self, name: str, *args: Any, ready_only: bool = False) -> Any:
        return self.routed if ready_only else None

    async def invoke(
        self, invocation: ToolInvocation, *args: Any, ready_only: bool = False, **kw: Any
    ) -> ToolExecutionResult:
        self.ran.append(ready_only)
        return ToolExecutionResult(tool_name=invocation.tool_name, content="ran")


async def test_a_listed_call_runs_over_the_ready_tools_when_they_route_it_to_that_tool(
    tmp_path: Path,
) -> None:
    registry = Starting("a", routed=tool("a"))
    source = await warm(tmp_path, registry, "a")

    result = await source.invoke(ToolInvocation(tool_name="a"))

    assert result.content == "ran"
    assert registry.ran == [True]
    assert not source.live.is_set()


async def test_a_listed_call_that_another_tool_answers_while_starting_waits_for_live(
    tmp_path: Path,
) -> None:
    other = ToolSpec(name="a", provider_type="plugin", tool_id="plugin:q:a")
    registry = Starting("a", routed=other)
    source = await warm(tmp_path, registry, "a")

    with anyio.fail_after(10):
        call = asyncio.ensure_future(source.invoke(ToolInvocation(tool_name="a")))
        await asyncio.sleep(0)  # the call is waiting now: only a change or live wakes it
        registry.changed("a")  # a change that still routes "a" to the other tool
        await asyncio.sleep(0)
        assert not call.done()
        await source.go_live()
        await call

    assert registry.ran == [False]


async def test_with_calls_held_a_call_whose_tool_is_ready_still_waits_for_live(
    tmp_path: Path,
) -> None:
    registry = Starting("a", routed=tool("a"))
    catalogue = ToolCatalogue(tmp_path / "tool-catalogue.json")
    catalogue.save([tool("a")], PRINTS)
    source = WarmStart(registry, catalogue, lambda: PRINTS, call_timeout=30, hold_calls=True)
    await source.load()

    with anyio.fail_after(10):
        call = asyncio.ensure_future(source.invoke(ToolInvocation(tool_name="a")))
        await asyncio.sleep(0)  # the call is waiting now: only live lets it run
        registry.changed("a")
        await asyncio.sleep(0)
        assert not call.done()
        await source.go_live()
        await call

    assert registry.ran == [False]


class Upstreams:
    """An upstream provider whose servers are in the states the test gives."""

    provider_name = "mcp"
    provider_type = "mcp"

    def __init__(self, **states: ServerState) -> None:
        self.states = states

    def status(self) -> dict[str, ServerStatus]:
        return {
            name: ServerStatus(state=state, transport="stdio")
            for name, state in self.states.items()
        }


@pytest.mark.parametrize(
    ("state", "warm_next"), [(ServerState.CONNECTED, True), (ServerState.FAILED, False)]
)
async def test_an_upstream_not_connected_when_the_list_is_saved_makes_the_next_start_cold(
    tmp_path: Path, state: ServerState, warm_next: bool
) -> None:
    prints = {**PRINTS, "mcp:up": "u"}
    registry = Registry("a")
    registry.own = (Upstreams(up=state),)
    catalogue = ToolCatalogue(tmp_path / "tool-catalogue.json")
    source = WarmStart(registry, catalogue, lambda: prints, call_timeout=30)

    await source.go_live()

    assert (catalogue.load(prints) is not None) is warm_next


class Loading:
    """A plugin provider whose tool is not ready at first: it becomes ready after ``ready_after``
    ready listings, the moment the test picks (a runner's load can end between two of them)."""

    provider_type = "plugin"

    def __init__(self, name: str, plugin_id: str, ready_after: int) -> None:
        self.provider_name = name
        self.spec = ToolSpec(
            name="a",
            provider_type="plugin",
            provider_name=name,
            tool_id=f"plugin:{plugin_id}:a",
            metadata={"plugin_id": plugin_id},
        )
        self.ready_after = ready_after
        self.ran: list[str] = []

    async def list_tools(self, context: Any = None) -> list[ToolSpec]:
        return [self.spec]

    async def list_ready_tools(self, context: Any = None) -> list[ToolSpec]:
        self.ready_after -= 1
        return [self.spec] if self.ready_after < 0 else []

    async def invoke(self, invocation: ToolInvocation, context: Any = None) -> ToolExecutionResult:
        self.ran.append(invocation.tool_name)
        return ToolExecutionResult(tool_name=invocation.tool_name, content=self.provider_name)

    async def close(self) -> None:
        pass


async def test_a_tool_that_takes_the_name_between_the_check_and_the_call_does_not_run_it(
    tmp_path: Path,
) -> None:
    from plughost.tools.registry import ToolRegistry

    # "a" of plugin p was catalogued; plugin q, ahead of it, also has an "a" (q changed, so
    # the catalogue does not list it) and becomes ready between the check and the routing.
    late, listed = Loading("first", "q", ready_after=1), Loading("second", "p", ready_after=0)
    registry = ToolRegistry()
    registry.register_provider(late)
    registry.register_provider(listed)
    catalogue = ToolCatalogue(tmp_path / "tool-catalogue.json")
    catalogue.save([listed.spec], PRINTS)
    source = WarmStart(registry, catalogue, lambda: PRINTS, call_timeout=30)
    await source.load()

    with anyio.fail_after(10):
        call = asyncio.ensure_future(source.invoke(ToolInvocation(tool_name="a")))
        await anyio.wait_all_tasks_blocked()
        ran_before_live = list(late.ran)
        await source.go_live()
        result = await call

    assert ran_before_live == []  # the call meant for p's "a" never reached q's
    assert result.content == "first"  # once live, the name is q's, as the live list says
