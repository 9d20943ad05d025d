"""A gateway plugin's inbound messages are checked and bounded; outbound ones are MaiBot's."""

from __future__ import annotations

from typing import Any

import pytest

from plughost.dispatch.gateway_messages import MAX_INBOUND_BYTES, outbound_message, read_inbound


def _message(**changes: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "message_id": "m1",
        "platform": "qq",
        "message_info": {
            "user_info": {"user_id": "9", "user_nickname": "小明"},
            "group_info": {"group_id": "123", "group_name": "群"},
            "additional_config": {"is_local_operator": True, "at_bot": True},
        },
        "raw_message": [{"type": "text", "data": "/roll "}, {"type": "image", "data": "..."}],
    }
    message.update(changes)
    return message


def test_the_text_stream_and_sender_are_read_and_operator_rights_dropped() -> None:
    inbound = read_inbound(_message())

    assert (inbound.text, inbound.stream_id, inbound.user_id, inbound.group_id) == (
        "/roll ",
        "qq:123",
        "9",
        "123",
    )
    assert inbound.message["message_info"]["additional_config"] == {"at_bot": True}
    assert inbound.message["session_id"] == "qq:123"


def test_a_private_message_has_a_stream_of_its_sender() -> None:
    info = {"user_info": {"user_id": "9"}, "group_info": None}

    assert read_inbound(_message(message_info=info)).stream_id == "qq:private:9"


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("text", "must be a MaiBot message dict, got str"),
        (_message(message_id=""), "message_id: String should have at least 1 character"),
        (_message(platform="bot_console"), "'bot_console' is the application's own console"),
        (_message(message_info={}), "message_info.user_info: Field required"),
        (_message(processed_plain_text="x" * MAX_INBOUND_BYTES), "bytes of JSON, over"),
    ],
    ids=["not-a-dict", "empty-id", "console", "no-sender", "too-large"],
)
def test_a_bad_inbound_message_is_refused_saying_why(message: Any, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        read_inbound(message)


def test_an_outbound_message_carries_one_segment_for_the_stream() -> None:
    message = outbound_message(
        "send.image", {"image_base64": "AAA", "stream_id": "qq:123"}, "qq", "123", ""
    )

    assert message["raw_message"] == [{"type": "image", "data": "AAA"}]
    assert message["message_info"]["group_info"] == {"group_id": "123", "group_name": ""}
    assert message["session_id"] == "qq:123"
    assert message["is_picture"] is True


def test_an_outbound_capability_a_gateway_does_not_carry_is_refused() -> None:
    with pytest.raises(
        ValueError, match=r"carries send\.text, send\.image, send\.emoji, not send\.forward"
    ):
        outbound_message("send.forward", {"messages": []}, "qq", "", "9")
