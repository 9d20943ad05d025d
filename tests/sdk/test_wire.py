"""The wire codec: envelopes round-trip, and arbitrary bytes only ever give a ProtocolError."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plughost_sdk import wire
from plughost_sdk.errors import ProtocolError
from plughost_sdk.models import ContentItem, ToolExecutionResult


def test_a_request_and_its_response_share_id_method_and_plugin() -> None:
    request = wire.request(7, "tool.invoke", {"tool": "x"}, plugin="a.b", deadline_ms=500)
    decoded = wire.decode(wire.encode(request))
    reply = wire.response(decoded, {"result": {}})
    assert (reply["id"], reply["method"], reply["plugin"]) == (7, "tool.invoke", "a.b")
    assert decoded["deadline_ms"] == 500


def test_binary_payloads_travel_as_bytes_not_base64() -> None:
    image = bytes(range(256)) * 10
    frame = wire.encode(wire.event("log.batch", {"data": image}))
    assert image in frame
    assert wire.decode(frame)["body"]["data"] == image


def test_a_frame_of_another_protocol_version_is_refused_with_the_fix() -> None:
    frame = msgpack.packb(
        {"v": wire.PROTOCOL_VERSION + 1, "kind": "request", "id": 1, "method": "runner.hello"}
    )
    with pytest.raises(ProtocolError, match="install matching"):
        wire.decode(frame)


def test_an_unencodable_body_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="cannot encode"):
        wire.encode(wire.request(1, "tool.invoke", {"x": object()}))


def test_results_round_trip_with_media_as_bytes() -> None:
    result = ToolExecutionResult(
        tool_name="draw",
        content="done",
        structured_content={"n": 1},
        content_items=[ContentItem(content_type="image", data=b"\x89PNG", mime_type="image/png")],
    )
    back = wire.result_from_wire(
        wire.decode(wire.encode(wire.event("progress", wire.result_to_wire(result))))["body"]
    )
    assert back == result


def test_a_body_that_is_not_a_result_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        wire.result_from_wire({"success": "maybe", "content_items": [{"content_type": "nope"}]})
    with pytest.raises(ProtocolError):
        wire.result_from_wire(["not", "a", "map"])


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=512))
def test_arbitrary_bytes_decode_or_raise_protocol_error_only(frame: bytes) -> None:
    try:
        envelope = wire.decode(frame)
    except ProtocolError:
        return
    assert envelope["v"] == wire.PROTOCOL_VERSION
    assert envelope["kind"] in ("request", "response", "event")


msgpack_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text() | st.binary(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["v", "kind", "id", "method", "body", "error"]), msgpack_values)
)
def test_arbitrary_maps_decode_to_an_envelope_or_raise_protocol_error(data: dict) -> None:
    frame = msgpack.packb(data, use_bin_type=True)
    try:
        envelope = wire.decode(frame)
    except ProtocolError:
        return
    assert isinstance(envelope["id"], int)
    assert isinstance(envelope["method"], str)


@settings(max_examples=200, deadline=None)
@given(msgpack_values)
def test_arbitrary_result_bodies_give_a_result_or_a_protocol_error(data: object) -> None:
    try:
        result = wire.result_from_wire(data)
    except ProtocolError:
        return
    assert isinstance(result, ToolExecutionResult)


def _image_result(size: int) -> ToolExecutionResult:
    image = ContentItem(content_type="image", data=b"\x89PNG" + bytes(size), mime_type="image/png")
    return ToolExecutionResult(tool_name="draw", success=True, content_items=[image])


def test_large_media_travel_as_their_own_frame_and_come_back_as_bytes() -> None:
    result = _image_result(wire.BLOB_MIN_BYTES)
    envelope = wire.request(7, "tool.invoke", wire.result_to_wire(result))

    parts = wire.encode_parts(envelope)
    decoded = wire.decode(parts[0], parts[1:])

    assert len(parts) == 2
    assert len(parts[0]) < 1024  # the envelope carries a reference, not the image
    item = wire.result_from_wire(decoded["body"]).content_items[0]
    assert isinstance(item.data, bytes)
    assert item.data == result.content_items[0].data


def test_small_media_stay_inside_the_envelope() -> None:
    envelope = wire.request(7, "tool.invoke", wire.result_to_wire(_image_result(100)))

    parts = wire.encode_parts(envelope)

    assert len(parts) == 1
    assert wire.decode(parts[0]) == wire.decode(wire.encode(envelope))


def test_a_reference_to_a_missing_blob_frame_is_a_protocol_error() -> None:
    envelope = wire.request(7, "tool.invoke", wire.result_to_wire(_image_result(70_000)))
    parts = wire.encode_parts(envelope)

    with pytest.raises(ProtocolError, match="blob frames"):
        wire.decode(parts[0])


def test_more_blobs_than_a_message_may_carry_cannot_be_encoded() -> None:
    body = [wire.Blob(b"x") for _ in range(wire.MAX_BLOBS + 1)]

    with pytest.raises(ProtocolError, match="blobs in one message"):
        wire.encode_parts(wire.request(1, "tool.invoke", body))


def test_encode_refuses_a_blob_so_it_is_never_silently_inlined() -> None:
    with pytest.raises(ProtocolError):
        wire.encode(wire.request(1, "tool.invoke", wire.Blob(b"x")))


def test_a_frame_may_hold_several_envelopes_back_to_back() -> None:
    envelopes = [wire.request(n, "tool.invoke", {"n": n}) for n in range(1, 4)]
    frame = b"".join(wire.encode(e) for e in envelopes)

    decoded = wire.decode_many(frame)

    assert [e["body"]["n"] for e in decoded] == [1, 2, 3]


def test_a_frame_with_one_bad_envelope_among_good_ones_is_refused_whole() -> None:
    good = wire.encode(wire.request(1, "tool.invoke", {}))
    bad = msgpack.packb({"v": wire.PROTOCOL_VERSION, "kind": "nonsense", "id": 2, "method": "x"})

    with pytest.raises(ProtocolError):
        wire.decode_many(good + bad)


def test_a_frame_cut_in_the_middle_of_an_envelope_is_refused() -> None:
    good = wire.encode(wire.request(1, "tool.invoke", {"text": "hello"}))

    with pytest.raises(ProtocolError, match="middle"):
        wire.decode_many(good + good[:-3])


def test_more_envelopes_in_one_frame_than_a_batch_may_hold_is_refused() -> None:
    one = wire.encode(wire.event("runner.heartbeat", {}))

    assert len(wire.decode_many(one * wire.MAX_BATCH)) == wire.MAX_BATCH
    with pytest.raises(ProtocolError, match="envelopes in one frame"):
        wire.decode_many(one * (wire.MAX_BATCH + 1))


def test_decode_still_refuses_a_frame_of_several_envelopes() -> None:
    one = wire.encode(wire.event("runner.heartbeat", {}))

    with pytest.raises(ProtocolError):
        wire.decode(one + one)


def test_a_large_frame_decoding_past_the_item_budget_is_a_protocol_error() -> None:
    over = wire.encode(wire.event("log.batch", {"records": [[]] * (wire.MAX_FRAME_ITEMS + 1)}))
    within = wire.encode(wire.event("log.batch", {"records": [[]] * 200_000}))

    with pytest.raises(ProtocolError, match="more than 1000000 items"):
        wire.decode(over)
    with pytest.raises(ProtocolError, match="more than 1000000 items"):
        wire.decode_many(over)
    assert wire.decode(within)["body"]["records"] == [[]] * 200_000
