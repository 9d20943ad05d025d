"""normalize_result / normalize_exception: every documented return shape, media, history text."""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from plughost_sdk import ContentItem, ToolError, ToolExecutionResult, results, wire
from plughost_sdk.results import normalize_exception, normalize_result, normalized_fields

PNG_BYTES = b"\x89PNG\r\n\x1a\n" + bytes(range(10))
PNG_B64 = base64.b64encode(PNG_BYTES).decode("ascii")


def _items(value: Any) -> list[ContentItem]:
    result = normalize_result("draw", value)
    assert result.success, result.error_message
    return result.content_items


# --- plain return shapes -------------------------------------------------------------------


def test_none_is_an_empty_success_shown_to_the_model_as_a_placeholder() -> None:
    result = normalize_result("noop", None)

    assert result == ToolExecutionResult(tool_name="noop")
    assert result.get_history_content() == "(noop completed with no output)"
    assert (
        normalize_result("blank", "  ").get_history_content() == "(blank completed with no output)"
    )


def test_a_dicts_post_history_messages_become_the_results_and_leave_the_structured_content() -> (
    None
):
    followup = {"role": "user", "content": "remember the note"}
    result = normalize_result("note", {"content": "ok", "post_history_messages": [followup]})
    assert result.post_history_messages == [followup]
    assert result.structured_content is None
    bad = normalize_result("note", {"post_history_messages": "remember"})
    assert bad.error_code == "invalid_result"
    assert "post_history_messages" in bad.error_message


def test_str_becomes_the_content() -> None:
    result = normalize_result("echo", "It is 21 °C in Oslo.")

    assert result.success is True
    assert result.content == "It is 21 °C in Oslo."
    assert result.structured_content is None
    assert result.error_code is None


def test_successful_status_tuple_becomes_the_content() -> None:
    result = normalize_result("greet", (True, "Greeted Ann"))

    assert result.success is True
    assert result.content == "Greeted Ann"
    assert result.error_message == ""
    assert result.error_code is None


def test_failed_status_tuple_is_a_tool_error_carrying_the_message() -> None:
    result = normalize_result("greet", (False, "Nobody to greet"))

    assert result.success is False
    assert result.error_message == "Nobody to greet"
    assert result.error_code == "tool_error"
    assert result.get_history_content() == "Nobody to greet"


def test_tuple_that_is_not_bool_and_str_is_structured_content() -> None:
    result = normalize_result("pair", (1, 2))

    assert result.success is True
    assert result.content == "[1, 2]"
    assert result.structured_content == [1, 2]


def test_bytes_become_one_binary_item() -> None:
    result = normalize_result("dump", b"\x00\x01raw")

    assert result.success is True
    assert result.content_items == [
        ContentItem(content_type="binary", data=b"\x00\x01raw", mime_type=None)
    ]


def test_list_is_structured_content_and_json_text() -> None:
    result = normalize_result("ls", [{"name": "a.txt"}, "b.txt", 3])

    assert result.content == '[{"name": "a.txt"}, "b.txt", 3]'
    assert result.structured_content == [{"name": "a.txt"}, "b.txt", 3]


@pytest.mark.parametrize(("value", "text"), [(42, "42"), (2.5, "2.5"), (False, "false")])
def test_scalar_becomes_its_json_text(value: Any, text: str) -> None:
    result = normalize_result("count", value)

    assert result.success is True
    assert result.content == text


def test_pydantic_model_becomes_structured_content() -> None:
    class Forecast(BaseModel):
        city: str
        highs: list[int]

    result = normalize_result("forecast", Forecast(city="Oslo", highs=[3, 5]))

    assert result.success is True
    assert result.structured_content == {"city": "Oslo", "highs": [3, 5]}
    assert result.content == ""
    assert result.get_history_content() == '{"city": "Oslo", "highs": [3, 5]}'


def test_dataclass_becomes_structured_content() -> None:
    @dataclasses.dataclass(slots=True)
    class Point:
        x: int
        y: int
        tags: tuple[str, ...] = ("a",)

    result = normalize_result("locate", Point(1, 2))

    assert result.structured_content == {"x": 1, "y": 2, "tags": ["a"]}


def test_unserializable_value_fails_saying_what_to_return_instead() -> None:
    result = normalize_result("weird", object())

    assert result.success is False
    assert result.error_code == "invalid_result"
    assert "type 'object'" in result.error_message
    assert "return a dict, a str, a list, or a (bool, str) tuple instead" in result.error_message


def test_unserializable_value_nested_in_a_dict_fails_without_raising() -> None:
    result = normalize_result("weird", {"handle": object()})

    assert result.success is False
    assert result.error_code == "invalid_result"


def test_a_returned_execution_result_is_kept_and_given_the_tool_name() -> None:
    ready = ToolExecutionResult(content="done", metadata={"k": 1})

    result = normalize_result("tool", ready)

    assert result.tool_name == "tool"
    assert result.content == "done"
    assert result.metadata == {"k": 1}


# --- dict return shapes --------------------------------------------------------------------


def test_dict_success_defaults_to_true_and_content_is_the_text() -> None:
    result = normalize_result("t", {"content": "Found 2 results"})

    assert result.success is True
    assert result.content == "Found 2 results"
    assert result.structured_content is None


def test_dict_message_is_the_text_when_there_is_no_content() -> None:
    result = normalize_result("notify", {"success": True, "message": "Replied"})

    assert result.content == "Replied"
    assert result.structured_content is None


def test_dict_content_wins_over_message() -> None:
    result = normalize_result("t", {"content": "main", "message": "aside"})

    assert result.content == "main"


def test_dict_failure_takes_its_error() -> None:
    result = normalize_result("t", {"success": False, "error": "quota exceeded"})

    assert result.success is False
    assert result.error_message == "quota exceeded"
    assert result.error_code == "tool_error"
    assert result.content == ""


def test_dict_failure_without_error_uses_its_message() -> None:
    result = normalize_result("t", {"success": False, "message": "city not found"})

    assert result.success is False
    assert result.error_message == "city not found"
    assert result.content == ""


def test_dict_failure_without_any_text_still_says_it_failed() -> None:
    result = normalize_result("t", {"success": False})

    assert result.error_message == "the tool reported failure without a message"


def test_dict_extra_keys_are_kept_as_structured_content() -> None:
    result = normalize_result("search", {"results": ["a", "b"], "count": 2})

    assert result.success is True
    assert result.content == ""
    assert result.structured_content == {"results": ["a", "b"], "count": 2}
    assert result.get_history_content() == '{"results": ["a", "b"], "count": 2}'


def test_dict_structured_content_keeps_envelope_keys_but_not_content_items() -> None:
    value = {
        "success": True,
        "content": "see image",
        "rows": 3,
        "content_items": [{"type": "image", "data": PNG_B64}],
    }

    result = normalize_result("chart", value)

    assert result.structured_content == {"success": True, "content": "see image", "rows": 3}
    assert len(result.content_items) == 1


def test_dict_non_text_content_is_rendered_as_json() -> None:
    result = normalize_result("t", {"content": {"a": 1}})

    assert result.content == '{"a": 1}'


# --- exceptions ----------------------------------------------------------------------------


def test_tool_error_keeps_its_message_for_the_model() -> None:
    exc = ToolError("City 'Atlantis' is unknown; try 'Oslo'", details={"known": ["Oslo"]})

    result = normalize_exception("get_weather", exc)

    assert result.success is False
    assert result.tool_name == "get_weather"
    assert result.error_message == "City 'Atlantis' is unknown; try 'Oslo'"
    assert result.error_code == "tool_error"
    assert result.metadata == {"details": {"known": ["Oslo"]}}


def test_other_exception_reports_its_type_and_message() -> None:
    result = normalize_exception("divide", ZeroDivisionError("division by zero"))

    assert result.success is False
    assert result.error_message == "ZeroDivisionError: division by zero"
    assert result.error_code == "plugin_exception"
    assert result.metadata == {"exception_type": "ZeroDivisionError"}
    assert result.get_history_content() == "Error: ZeroDivisionError: division by zero"


def test_exception_without_a_message_reports_its_type() -> None:
    result = normalize_exception("t", KeyError())

    assert result.error_message == "KeyError"


# --- content_items -------------------------------------------------------------------------


def test_image_item_from_the_contract_example_is_decoded_once() -> None:
    (item,) = _items(
        {
            "success": True,
            "content": "The image has been generated.",
            "content_items": [
                {
                    "type": "image",
                    "data": PNG_B64,
                    "mime_type": "image/png",
                    "name": "result.png",
                    "description": "Image generated from the prompt",
                }
            ],
        }
    )

    assert item == ContentItem(
        content_type="image",
        data=PNG_BYTES,
        mime_type="image/png",
        name="result.png",
        description="Image generated from the prompt",
    )


@pytest.mark.parametrize("type_key", ["type", "content_type"])
def test_item_type_may_be_given_as_type_or_content_type(type_key: str) -> None:
    (item,) = _items({"content_items": [{type_key: "audio", "data": PNG_B64}]})

    assert item.content_type == "audio"


@pytest.mark.parametrize("payload_key", ["data", "base64"])
def test_item_payload_may_be_given_as_data_or_base64(payload_key: str) -> None:
    (item,) = _items({"content_items": [{"type": "image", payload_key: PNG_B64}]})

    assert item.data == PNG_BYTES


def test_base64_text_with_line_breaks_is_accepted() -> None:
    wrapped = base64.encodebytes(PNG_BYTES * 20).decode("ascii")
    assert "\n" in wrapped.strip()

    (item,) = _items({"content_items": [{"type": "image", "data": wrapped}]})

    assert item.data == PNG_BYTES * 20


@pytest.mark.parametrize("payload_key", ["data", "bytes"])
def test_raw_bytes_payload_is_taken_as_is(payload_key: str) -> None:
    (item,) = _items({"content_items": [{"type": "binary", payload_key: b"\x00raw"}]})

    assert item.data == b"\x00raw"
    assert item.mime_type == "application/octet-stream"


def test_image_mime_type_is_sniffed_when_not_given() -> None:
    jpeg = base64.b64encode(b"\xff\xd8\xff\xe0rest").decode()

    png_item, jpeg_item = _items(
        {"content_items": [{"type": "image", "data": PNG_B64}, {"type": "image", "data": jpeg}]}
    )

    assert png_item.mime_type == "image/png"
    assert jpeg_item.mime_type == "image/jpeg"


def test_base64_data_url_is_decoded_with_the_mime_type_of_the_url() -> None:
    (item,) = _items(
        {"content_items": [{"type": "image", "uri": f"data:image/webp;base64,{PNG_B64}"}]}
    )

    assert item.data == PNG_BYTES
    assert item.mime_type == "image/webp"
    assert item.uri is None


def test_percent_encoded_data_url_is_decoded_with_the_mime_type_of_the_url() -> None:
    uri = "data:text/plain;charset=utf-8,hello%20world%21"

    (item,) = _items({"content_items": [{"type": "resource", "uri": uri}]})

    assert item.data == b"hello world!"
    assert item.mime_type == "text/plain"


def test_explicit_mime_type_wins_over_the_data_url() -> None:
    item_data = {
        "type": "image",
        "uri": f"data:image/jpeg;base64,{PNG_B64}",
        "mime_type": "image/png",
    }

    (item,) = _items({"content_items": [item_data]})

    assert item.mime_type == "image/png"


def test_resource_link_keeps_its_uri() -> None:
    (item,) = _items(
        {
            "content_items": [
                {"type": "resource_link", "uri": "https://example.org/report.pdf", "name": "report"}
            ]
        }
    )

    assert item.content_type == "resource_link"
    assert item.uri == "https://example.org/report.pdf"
    assert item.data is None


def test_text_item_keeps_its_text() -> None:
    (item,) = _items({"content_items": [{"type": "text", "text": "caption"}]})

    assert item == ContentItem(content_type="text", text="caption")


def test_item_name_description_and_metadata_are_kept() -> None:
    raw = {
        "type": "audio",
        "data": PNG_B64,
        "mime_type": "audio/ogg",
        "name": "clip.ogg",
        "description": "A short clip",
        "metadata": {"duration_s": 2.5},
    }

    (item,) = _items({"content_items": [raw]})

    assert item.name == "clip.ogg"
    assert item.description == "A short clip"
    assert item.metadata == {"duration_s": 2.5}
    assert item.mime_type == "audio/ogg"


def test_content_item_instances_are_accepted_as_is() -> None:
    ready = ContentItem(content_type="text", text="ready")

    assert _items({"content_items": [ready]}) == [ready]


def test_content_items_none_means_no_items() -> None:
    assert _items({"content": "x", "content_items": None}) == []


GOOD_ITEM = {"type": "text", "text": "fine"}


@pytest.mark.parametrize(
    ("bad_item", "expected"),
    [
        (
            {"type": "image", "data": "not base64!!"},
            "content_items[2].data is not valid base64",
        ),
        (
            {"type": "image", "uri": "data:image/png;base64,@@@"},
            "content_items[2].uri is not valid base64",
        ),
        ({"type": "image", "uri": "data:image/png;base64"}, "content_items[2].uri is a data: URL"),
        ({"type": "video", "data": PNG_B64}, "content_items[2] has unknown type 'video'"),
        ({"data": PNG_B64}, "content_items[2] has unknown type None"),
        ({"type": ["image"], "data": PNG_B64}, "content_items[2] has unknown type ['image']"),
        ({"type": "image"}, "content_items[2] is an image item without a payload"),
        ({"type": "binary", "name": "x"}, "content_items[2] is a binary item without a payload"),
        ({"type": "text"}, "content_items[2] is a text item without 'text'"),
        ({"type": "resource_link"}, "content_items[2] is a resource_link without 'uri'"),
        ({"type": "image", "data": 12}, "content_items[2].data must be base64 text or bytes"),
        (
            {"type": "text", "text": "x", "metadata": [1]},
            "content_items[2].metadata must be a dict",
        ),
        ({"type": "text", "text": "x", "metadata": {1: "a"}}, "content_items[2] is invalid"),
        ("an image", "content_items[2] must be a dict, not str"),
        (None, "content_items[2] must be a dict, not NoneType"),
    ],
)
def test_malformed_content_item_fails_naming_its_index(bad_item: Any, expected: str) -> None:
    value = {"content": "ok", "content_items": [GOOD_ITEM, GOOD_ITEM, bad_item]}

    result = normalize_result("draw", value)

    assert result.success is False
    assert result.error_code == "invalid_result"
    assert expected in result.error_message
    assert result.content_items == []


@pytest.mark.parametrize("not_a_list", ["image", {"type": "image"}, 3])
def test_content_items_that_is_not_a_list_fails(not_a_list: Any) -> None:
    result = normalize_result("draw", {"content_items": not_a_list})

    assert result.success is False
    assert result.error_code == "invalid_result"
    assert result.error_message.startswith("content_items must be a list, not ")


# --- history text --------------------------------------------------------------------------


def test_history_has_text_then_item_summary_then_error_and_no_structured_json() -> None:
    result = normalize_result(
        "chart",
        {
            "success": False,
            "content": "Half the chart was drawn.",
            "error": "disk full",
            "rows": 3,
            "content_items": [
                {"type": "image", "data": PNG_B64, "name": "a.png", "description": "A chart"}
            ],
        },
    )

    assert result.get_history_content() == (
        "Half the chart was drawn.\n[image: a.png, image/png, 18 B] A chart\nError: disk full"
    )


def test_history_has_structured_json_after_the_items_when_there_is_no_text() -> None:
    result = normalize_result(
        "chart",
        {"rows": 3, "content_items": [{"type": "image", "data": PNG_B64, "name": "a.png"}]},
    )

    assert result.get_history_content() == '[image: a.png, image/png, 18 B]\n{"rows": 3}'


def test_history_never_contains_base64_or_raw_bytes() -> None:
    payload = bytes(range(256)) * 8
    encoded = base64.b64encode(payload).decode()
    result = normalize_result(
        "media",
        {
            "content_items": [
                {"type": "image", "data": encoded, "name": "big.png"},
                {"type": "audio", "uri": f"data:audio/ogg;base64,{encoded}"},
                {"type": "binary", "bytes": payload},
            ]
        },
    )

    history = result.get_history_content()

    assert result.success is True
    assert encoded[:40] not in history
    assert repr(payload[:16])[2:-1] not in history
    assert history.splitlines() == [
        "[image: big.png, application/octet-stream, 2.0 KiB]",
        "[audio: audio, audio/ogg, 2.0 KiB]",
        "[binary: binary, application/octet-stream, 2.0 KiB]",
    ]


def test_history_of_text_items_is_their_text() -> None:
    result = normalize_result("t", {"content_items": [{"type": "text", "text": "line one"}]})

    assert result.get_history_content() == "line one"


# --- properties ----------------------------------------------------------------------------

json_like = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=12)
    | st.binary(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=25,
)

ITEM_KEYS = [
    "type",
    "content_type",
    "data",
    "base64",
    "bytes",
    "uri",
    "text",
    "mime_type",
    "name",
    "description",
    "metadata",
]
item_values = (
    st.sampled_from(["text", "image", "audio", "resource_link", "resource", "binary", "video"])
    | st.sampled_from([PNG_B64, "data:image/png;base64," + PNG_B64, "data:,x%20y", "data:"])
    | json_like
)
content_item_dicts = st.dictionaries(st.sampled_from(ITEM_KEYS), item_values, max_size=6)
content_items_lists = st.lists(content_item_dicts | json_like, max_size=5)


def _check_never_raises(value: Any) -> None:
    result = normalize_result("prop", value)

    assert isinstance(result, ToolExecutionResult)
    assert result.tool_name == "prop"
    assert isinstance(result.get_history_content(), str)
    if not result.success:
        assert result.error_message


@given(json_like)
def test_normalize_result_never_raises_on_nested_json_like_values(value: Any) -> None:
    _check_never_raises(value)


@given(content_items_lists, json_like)
def test_normalize_result_never_raises_on_arbitrary_content_items(
    items: list[Any], extra: Any
) -> None:
    _check_never_raises({"content": "x", "content_items": items, "extra": extra})


@given(st.dictionaries(st.sampled_from(["success", "content", "message", "error"]), json_like))
def test_normalize_result_never_raises_on_arbitrary_envelopes(envelope: dict[str, Any]) -> None:
    _check_never_raises(envelope)


@given(content_items_lists | json_like)
def test_normalize_result_never_raises_when_content_items_is_anything(items: Any) -> None:
    _check_never_raises({"content_items": items})


# --- the runner's path: fields straight to the wire ------------------------------------------

returned_values = (
    json_like
    | content_items_lists.map(lambda items: {"content": "x", "content_items": items})
    | st.dictionaries(st.sampled_from(["success", "content", "message", "error"]), json_like)
    | st.tuples(st.booleans(), st.text(max_size=8))
    | st.builds(ToolExecutionResult, tool_name=st.text(max_size=4), content=st.text(max_size=8))
)


@given(returned_values)
def test_the_runners_wire_fields_encode_exactly_as_the_normalized_result(value: Any) -> None:
    # The runner skips the model (normalized_fields -> fields_to_wire); what it sends
    # must be byte for byte what the model would have been sent as.
    by_model = wire.result_to_wire(normalize_result("prop", value))
    by_fields = wire.fields_to_wire(normalized_fields("prop", value))

    assert _packed(by_fields) == _packed(by_model)
    assert wire.result_from_wire(by_fields) == normalize_result("prop", value)


def _packed(data: Any) -> bytes | str:
    """The msgpack bytes, or the kind of error (an int msgpack cannot hold fails both ways)."""
    try:
        return bytes(msgpack.packb(data))
    except (OverflowError, TypeError, ValueError) as exc:
        return type(exc).__name__


def test_fields_the_model_refuses_fail_naming_the_field_and_what_to_return(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Not reachable through the shapes above; the promise "never raises" holds anyway.
    monkeypatch.setattr(results, "normalized_fields", lambda name, value: {"content": [1]})

    result = normalize_result("prop", "x")

    assert not result.success and result.error_code == "invalid_result"
    assert "content" in result.error_message
    assert "return a dict, a str" in result.error_message
