"""The example plugins: manifests, declarations, and handlers called with a fake context."""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import logging
import struct
import sys
import tomllib
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic import ValidationError

import plughost_sdk
from plughost_sdk import Plugin, PluginConfig, PluginContext, ToolError
from plughost_sdk.manifest import load_manifest, version_in_range
from plughost_sdk.results import normalize_result

from .fakes import FakeBridge

EXAMPLES = Path(__file__).resolve().parents[2] / "plugins_example"
FOLDERS = {
    "search_tools": "plughost.example-search",
    "image_tools": "plughost.example-image",
    "legacy_greeter": "plughost.example-greeter",
    "notifier": "plughost.example-notifier",
    "unit_converter": "plughost.example-units",
    "chat_guard": "plughost.example-chat-guard",
}
_unique = itertools.count()

Loader = Callable[[str], ModuleType]


@pytest.fixture
def load_example() -> Iterator[Loader]:
    """Import an example's plugin.py under a fresh module name, as the runner does."""
    names: list[str] = []

    def load(folder: str) -> ModuleType:
        name = f"plughost_example_{folder}_{next(_unique)}"
        spec = importlib.util.spec_from_file_location(name, EXAMPLES / folder / "plugin.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        names.append(name)
        spec.loader.exec_module(module)
        return module

    yield load
    for name in names:
        sys.modules.pop(name, None)


def _create(module: ModuleType, bridge: FakeBridge, config: dict[str, Any] | None = None) -> Any:
    plugin = module.create_plugin()
    assert isinstance(plugin, Plugin)
    folder = Path(module.__file__ or "").parent.name
    plugin.ctx = PluginContext(FOLDERS[folder], bridge, config=PluginConfig(config or {}))
    return plugin


# --- every example -------------------------------------------------------------------------


def test_every_example_folder_is_listed() -> None:
    folders = {p.parent.name for p in EXAMPLES.glob("*/plugin.py")}

    assert folders == set(FOLDERS)


@pytest.mark.parametrize(("folder", "plugin_id"), FOLDERS.items())
def test_example_manifest_is_valid_and_accepts_this_sdk(folder: str, plugin_id: str) -> None:
    manifest = load_manifest(EXAMPLES / folder)

    assert manifest.id == plugin_id
    assert manifest.license == "MIT"
    assert manifest.author.name
    assert manifest.warnings() == []
    assert manifest.plughost_sdk is not None
    assert version_in_range(plughost_sdk.__version__, manifest.plughost_sdk)


@pytest.mark.parametrize("folder", sorted(set(FOLDERS) - {"legacy_greeter", "chat_guard"}))
def test_example_declares_tools_whose_handlers_exist(folder: str, load_example: Loader) -> None:
    module = load_example(folder)
    plugin = module.create_plugin()

    declarations = type(plugin).tool_declarations()

    assert declarations
    for declaration in declarations:
        assert callable(getattr(plugin, declaration.handler_name))
        assert "**" in str(inspect.signature(getattr(plugin, declaration.handler_name)))


def test_only_the_notifier_asks_for_a_capability() -> None:
    capabilities = {f: load_manifest(EXAMPLES / f).capabilities for f in FOLDERS}

    assert capabilities == {
        "search_tools": [],
        "image_tools": [],
        "legacy_greeter": [],
        "notifier": ["send.text"],
        "unit_converter": [],
        "chat_guard": [],
    }


# --- search_tools --------------------------------------------------------------------------


@pytest.fixture
def search(load_example: Loader) -> Any:
    return _create(load_example("search_tools"), FakeBridge())


def test_search_example_uses_the_tool_guide_declarations(search: Any) -> None:
    declarations = {d.name: d for d in type(search).tool_declarations()}

    assert list(declarations) == ["search_web", "get_weather"]
    assert declarations["search_web"].parameters_schema == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Search keywords"},
            "limit": {
                "type": "integer",
                "description": "Maximum number of results to return",
                "default": 5,
            },
        },
        "required": ["query"],
    }
    assert declarations["search_web"].description == (
        "Search the internet for information\n\n"
        "Use a search engine to find related information. Returns a list of results that "
        "best match the keywords.\n\n"
        "Parameter details:\n"
        "- query: string, required. Search keywords\n"
        "- limit: integer, optional. Maximum number of results to return. Default: 5"
    )
    assert declarations["get_weather"].description == (
        "Get weather information for a specified city\n\n"
        "Parameter details:\n- city: string, required. City name"
    )


async def test_search_web_ranks_documents_by_keyword_overlap(search: Any) -> None:
    result = await search.search(query="weather forecast models", limit=3, stream_id="s")

    assert result["count"] == len(result["results"])
    assert result["results"][0]["title"] == "How weather forecasts work"
    assert result["results"][0]["score"] == 2
    scores = [r["score"] for r in result["results"]]
    assert scores == sorted(scores, reverse=True)


async def test_search_web_respects_the_limit(search: Any) -> None:
    result = await search.search(query="the a of and", limit=2)

    assert result["count"] == 2


async def test_search_web_with_no_match_returns_no_results(search: Any) -> None:
    assert await search.search(query="xylophone") == {"results": [], "count": 0}


async def test_search_web_rejects_a_limit_out_of_range(search: Any) -> None:
    with pytest.raises(ToolError, match="limit must be between 1 and 20, got 0"):
        await search.search(query="python", limit=0)


async def test_get_weather_returns_the_fixed_data_ignoring_case(search: Any) -> None:
    result = await search.get_weather(city=" oslo ", stream_id="s")

    assert result == {
        "city": " oslo ",
        "weather": {
            "condition": "Light snow",
            "temperature_c": -3,
            "humidity_pct": 86,
            "wind_kph": 14,
        },
    }
    assert (await search.get_weather(city="TOKYO"))["weather"]["condition"] == "Clear"


async def test_get_weather_for_an_unknown_city_lists_the_known_ones(search: Any) -> None:
    with pytest.raises(ToolError) as caught:
        await search.get_weather(city="Atlantis")

    assert str(caught.value).startswith("No weather data for 'Atlantis'. Known cities: ")
    assert "Oslo" in str(caught.value)


async def test_search_on_load_logs_through_the_plugin_logger(
    search: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="plugin.plughost.example-search"):
        await search.on_load()

    assert caplog.messages == ["Search plugin loaded documents=15"]


# --- image_tools ---------------------------------------------------------------------------


@pytest.fixture
def images(load_example: Loader) -> Any:
    return _create(load_example("image_tools"), FakeBridge())


def _read_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """Return (width, height, rows of RGB bytes) of an unfiltered 8-bit RGB PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks: dict[bytes, bytes] = {}
    offset = 8
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        payload = data[offset + 8 : offset + 8 + length]
        (crc,) = struct.unpack(">I", data[offset + 8 + length : offset + 12 + length])
        assert crc == zlib.crc32(kind + payload)
        chunks[kind] = chunks.get(kind, b"") + payload
        offset += 12 + length
    assert list(chunks)[-1] == b"IEND"
    width, height, depth, color_type = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert (depth, color_type) == (8, 2)
    raw = zlib.decompress(chunks[b"IDAT"])
    stride = 1 + width * 3
    rows = [raw[i * stride : (i + 1) * stride] for i in range(height)]
    assert all(row[0] == 0 for row in rows)
    return width, height, [row[1:] for row in rows]


async def test_render_swatch_returns_a_decodable_png_as_an_image_item(images: Any) -> None:
    value = await images.render_swatch(color="#ff8000", width=7, height=3, stream_id="s")

    result = normalize_result("render_swatch", value)

    assert result.success is True
    assert result.content == "Rendered a solid swatch 7x3. The image is attached."
    (item,) = result.content_items
    assert item.content_type == "image"
    assert item.mime_type == "image/png"
    assert item.name == "swatch.png"
    assert item.description == "A solid swatch 7x3 from #ff8000"
    assert item.data is not None
    width, height, rows = _read_png(item.data)
    assert (width, height) == (7, 3)
    assert rows == [bytes([255, 128, 0]) * 7] * 3


async def test_render_swatch_draws_a_left_to_right_gradient(images: Any) -> None:
    value = await images.render_swatch(color="black", end_color="#fff", width=3, height=2)

    item = normalize_result("render_swatch", value).content_items[0]

    assert item.data is not None
    _, _, rows = _read_png(item.data)
    assert rows[0] == bytes([0, 0, 0, 128, 128, 128, 255, 255, 255])
    assert rows[1] == rows[0]
    assert "gradient swatch 3x2" in value["content"]


async def test_render_swatch_uses_its_default_size(images: Any) -> None:
    value = await images.render_swatch(color="blue")

    item = normalize_result("render_swatch", value).content_items[0]

    assert item.data is not None
    assert struct.unpack(">II", item.data[16:24]) == (128, 64)


@pytest.mark.parametrize(("width", "height", "bad"), [(0, 10, "width"), (10, 513, "height")])
async def test_render_swatch_rejects_bad_sizes_with_a_hint(
    images: Any, width: int, height: int, bad: str
) -> None:
    with pytest.raises(ToolError) as caught:
        await images.render_swatch(color="red", width=width, height=height)

    message = str(caught.value)
    assert message.startswith(f"{bad} must be between 1 and 512 pixels, got ")
    assert "try 128 x 64" in message


@pytest.mark.parametrize("color", ["#12345", "teal-ish", "#gggggg", ""])
async def test_render_swatch_rejects_unknown_colours(images: Any, color: str) -> None:
    with pytest.raises(ToolError, match=r"is not a colour; use a hex code like '#1e90ff'"):
        await images.render_swatch(color=color)


def test_render_swatch_declaration(images: Any) -> None:
    (declaration,) = type(images).tool_declarations()

    assert declaration.name == "render_swatch"
    assert declaration.parameters_schema["required"] == ["color"]
    assert declaration.parameters_schema["properties"]["width"] == {
        "type": "integer",
        "description": "Width in pixels, 1 to 512",
        "default": 128,
    }
    assert declaration.metadata["read_only"] is True


# --- legacy_greeter ------------------------------------------------------------------------


@pytest.fixture
def greeter(load_example: Loader) -> Any:
    with pytest.warns(DeprecationWarning, match=r"@Action\('greet'\) is deprecated"):
        module = load_example("legacy_greeter")
    return _create(module, FakeBridge())


def test_legacy_greeter_action_becomes_a_keyword_activated_tool(greeter: Any) -> None:
    (declaration,) = type(greeter).tool_declarations()

    assert declaration.name == "greet"
    assert declaration.legacy_action is True
    assert declaration.metadata["legacy_action"] is True
    assert declaration.metadata["activation_type"] == "keyword"
    assert declaration.metadata["activation_keywords"] == ["hello", "hi"]
    assert declaration.parameters_schema == {
        "type": "object",
        "properties": {"target": {"type": "string", "description": "who to greet"}},
    }


async def test_legacy_greeter_reads_action_data_and_returns_a_status_tuple(
    greeter: Any,
) -> None:
    value = await greeter.greet(action_data={"target": "Ann"}, reasoning="Ann said hi")

    assert value == (True, "Hello, Ann! Nice to see you.")
    assert normalize_result("greet", value).content == "Hello, Ann! Nice to see you."


async def test_legacy_greeter_also_accepts_the_parameter_as_a_keyword(greeter: Any) -> None:
    assert await greeter.greet(target="Bob", stream_id="s") == (
        True,
        "Hello, Bob! Nice to see you.",
    )


async def test_legacy_greeter_without_a_target_fails_with_a_message(greeter: Any) -> None:
    value = await greeter.greet(action_data={})

    result = normalize_result("greet", value)

    assert result.success is False
    assert result.error_message == "Nobody to greet: pass the person's name as 'target'."


# --- notifier ------------------------------------------------------------------------------


def _notifier_config() -> dict[str, Any]:
    return tomllib.loads((EXAMPLES / "notifier" / "config.toml").read_text(encoding="utf-8"))


@pytest.fixture
def bridge() -> FakeBridge:
    return FakeBridge()


@pytest.fixture
def notifier(load_example: Loader, bridge: FakeBridge) -> Any:
    return _create(load_example("notifier"), bridge, _notifier_config())


def test_notifier_ships_a_config_that_its_model_accepts(notifier: Any) -> None:
    config = _notifier_config()

    assert config == {"notify": {"prefix": "[bot] ", "max_length": 200}}
    type(notifier).config_model.model_validate(config)


def test_notifier_config_model_rejects_a_bad_max_length(notifier: Any) -> None:
    with pytest.raises(ValidationError, match="max_length"):
        type(notifier).config_model.model_validate({"notify": {"max_length": 0}})


async def test_notify_sends_to_the_current_stream_with_the_configured_prefix(
    notifier: Any, bridge: FakeBridge
) -> None:
    value = await notifier.notify(text="Deploy finished", stream_id="stream-7")

    assert bridge.calls == [
        (
            "plughost.example-notifier",
            "send.text",
            {"text": "[bot] Deploy finished", "stream_id": "stream-7"},
            None,
        )
    ]
    assert value == {"success": True, "message": "Posted the notice (21 characters)."}


async def test_notify_shortens_long_text_to_the_configured_length(
    load_example: Loader, bridge: FakeBridge
) -> None:
    config = {"notify": {"prefix": "> ", "max_length": 10}}
    notifier = _create(load_example("notifier"), bridge, config)

    await notifier.notify(text="abcdefghijklmnop", stream_id="s")

    assert bridge.calls[0][2]["text"] == "> abcdefg…"


async def test_notify_without_a_stream_is_a_tool_error(notifier: Any, bridge: FakeBridge) -> None:
    with pytest.raises(ToolError, match="only be used inside a chat"):
        await notifier.notify(text="hello")

    assert bridge.calls == []


async def test_notify_uses_defaults_when_config_is_empty(
    load_example: Loader, bridge: FakeBridge
) -> None:
    notifier = _create(load_example("notifier"), bridge, {})

    await notifier.notify(text="hi", stream_id="s")

    assert bridge.calls[0][2]["text"] == "[bot] hi"


async def test_notifier_logs_config_updates(
    notifier: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="plugin.plughost.example-notifier"):
        await notifier.on_config_update("self", {"notify": {"prefix": "! "}}, "v2")

    assert caplog.messages == ["config updated scope=self version=v2 prefix='! ' max_length=None"]


# --- unit_converter ------------------------------------------------------------------------


@pytest.fixture
def units(load_example: Loader) -> Any:
    return _create(load_example("unit_converter"), FakeBridge())


def test_unit_convert_is_a_sync_read_only_tool(units: Any) -> None:
    (declaration,) = type(units).tool_declarations()

    assert declaration.metadata["read_only"] is True
    assert not inspect.iscoroutinefunction(units.unit_convert)
    assert declaration.parameters_schema["properties"]["value"] == {
        "type": "number",
        "description": "The amount",
    }
    assert "km" in declaration.parameters_schema["properties"]["to_unit"]["enum"]


@pytest.mark.parametrize(
    ("value", "from_unit", "to_unit", "expected", "text"),
    [
        (1, "km", "mi", 0.621371192, "1 km = 0.621371 mi"),
        (100, "c", "f", 212.0, "100 c = 212 f"),
        (32, "f", "k", 273.15, "32 f = 273.15 k"),
        (1, "lb", "g", 453.59237, "1 lb = 453.592 g"),
    ],
)
def test_unit_convert_converts_within_a_dimension(
    units: Any, value: float, from_unit: str, to_unit: str, expected: float, text: str
) -> None:
    result = units.unit_convert(value=value, from_unit=from_unit, to_unit=to_unit)

    assert result["value"] == pytest.approx(expected)
    assert result["unit"] == to_unit
    assert result["content"] == text


@pytest.mark.parametrize(
    ("from_unit", "to_unit", "message"),
    [
        ("km", "kg", r"cannot convert length \(km\) to mass \(kg\)"),
        ("km", "parsec", r"unknown unit 'parsec'"),
        ("k", "c", r"below absolute zero"),
    ],
)
def test_unit_convert_explains_impossible_conversions(
    units: Any, from_unit: str, to_unit: str, message: str
) -> None:
    with pytest.raises(ToolError, match=message):
        units.unit_convert(value=-1, from_unit=from_unit, to_unit=to_unit)


# --- chat_guard ----------------------------------------------------------------------------


@pytest.fixture
def guard(load_example: Loader) -> Any:
    return _create(load_example("chat_guard"), FakeBridge())


def test_chat_guard_declares_a_filter_a_command_and_a_planner_hook(guard: Any) -> None:
    components = {c["name"]: c for c in guard.get_components()}

    assert type(guard).tool_declarations() == []
    assert components["spam_filter"]["type"] == "EVENT_HANDLER"
    assert components["spam_filter"]["metadata"]["intercept_message"] is True
    assert components["weather"]["metadata"]["command_pattern"] == r"^/weather\s+(?P<city>\w+)"
    assert components["planner_brevity"]["metadata"]["hook"] == "maisaka.planner.before_request"


async def test_chat_guard_drops_blocked_words_and_tidies_the_rest(guard: Any) -> None:
    dropped = await guard.spam_filter({"processed_plain_text": "Cheap CASINO chips"})
    kept = await guard.spam_filter({"processed_plain_text": "  hello \n there "})

    assert dropped["continue_processing"] is False
    assert kept == {"modified_message": {"processed_plain_text": "hello there"}}


async def test_chat_guard_blocked_words_come_from_the_config(load_example: Loader) -> None:
    plugin = _create(load_example("chat_guard"), FakeBridge(), {"blocked_words": ["tea"]})

    assert (await plugin.spam_filter({"processed_plain_text": "casino"})) != {
        "continue_processing": False,
        "custom_result": "blocked word",
    }
    assert (await plugin.spam_filter({"processed_plain_text": "green tea"}))[
        "continue_processing"
    ] is False


async def test_chat_guard_weather_command_answers_and_stops_processing(guard: Any) -> None:
    assert await guard.weather({"city": "Paris"}) == (True, "Paris: cloudy, 17 °C", True)
    ok, text, stop = await guard.weather({"city": "Lima"})
    assert (ok, stop) == (False, True)
    assert "oslo, paris, tokyo" in text


async def test_chat_guard_hook_appends_a_reminder_to_the_planner_items(guard: Any) -> None:
    reply = await guard.planner_brevity(items=[{"role": "user", "content": "hi"}], session_id="s")

    assert reply["modified_kwargs"]["session_id"] == "s"
    assert reply["modified_kwargs"]["items"][-1]["content"] == "Answer in one or two sentences."
