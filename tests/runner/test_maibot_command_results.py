"""A MaiBot command's value is read after MaiBot's msgpack link: tuples as lists, enums as values.

The end-to-end differential test is tests/integration/test_maibot_command_results.py.
"""

from __future__ import annotations

import enum
from typing import Any

import msgpack
import pytest

from plughost_runner.maibot.commands import command_failure, command_reply


class Mood(enum.Enum):
    HAPPY = "开心"


def _over_maibots_link(value: Any) -> Any:
    packed = msgpack.packb(value, default=lambda v: v.value)
    return msgpack.unpackb(packed, raw=False)


@pytest.mark.parametrize(
    "value",
    [(True, "好"), ("a", ("b", 1)), {"k": (1, 2)}, Mood.HAPPY, [Mood.HAPPY, None], 3.5, b"x"],
    ids=repr,
)
def test_a_value_that_is_not_three_items_replies_its_str_after_the_link(value: Any) -> None:
    reply = command_reply(value, {"intercept_message_level": 1})

    assert reply == {
        "success": True,
        "response": str(_over_maibots_link(value)),
        "intercept": True,
        "error": "",
    }


def test_three_items_give_the_text_and_the_interception_and_ignore_the_flag() -> None:
    assert command_reply((False, None, 0), {"intercept_message_level": 1}) == {
        "success": True,
        "response": None,
        "intercept": False,
        "error": "",
    }


def test_a_raised_command_replies_its_message_and_intercepts_by_its_metadata() -> None:
    reply = command_failure(KeyError("骰子"), "KeyError: '骰子'", {})

    assert reply == {
        "success": False,
        "response": "'骰子'",
        "intercept": False,
        "error": "KeyError: '骰子'",
    }
