"""Differential: every ctx proxy method of MaiBot's real SDK against plughost's MaiBot layer.

Both contexts are driven with the same arguments and the same host answer; they
must put the same capability name and keyword arguments on the wire and return
the same value. The methods are enumerated from the real SDK, so a proxy or
method plughost lacks fails here.
"""

from __future__ import annotations

import inspect
from typing import Any

import maibot_sdk.context as real_context
import pytest

from plughost_sdk.errors import CapabilityError
from plughost_sdk.maibot.context import (
    MaiBotCapabilityError,
    PluginContext,
    bridge_rpc_call,
)

PROXIES = [
    name
    for name, value in vars(real_context.PluginContext("probe")).items()
    if not name.startswith("_") and name != "paths"
]


def _methods(proxy: object, prefix: str) -> list[tuple[str, Any]]:
    found = []
    for name, member in inspect.getmembers(proxy):
        if name.startswith("_"):
            continue
        if inspect.iscoroutinefunction(member):
            found.append((f"{prefix}.{name}", member))
        elif type(member).__module__.startswith("maibot_sdk.capabilities"):
            found += _methods(member, f"{prefix}.{name}")  # ctx.maisaka.reply, ctx.statistics.local
    return found


METHODS = sorted(
    path
    for proxy in PROXIES
    for path, _ in _methods(getattr(real_context.PluginContext("p"), proxy), proxy)
)


def _resolve(ctx: object, path: str) -> Any:
    target: Any = ctx
    for part in path.split("."):
        target = getattr(target, part)
    return target


def _sample(parameter: inspect.Parameter) -> Any:
    if parameter.name == "component_type":
        return "tool"  # must be a type name; MaiBot's proxy normalizes it to "TOOL"
    text = str(parameter.annotation)
    if "bool" in text and "dict" not in text:
        return True
    if "list" in text:
        return [{"type": "text", "data": parameter.name}]
    if "dict" in text:
        return {"key": parameter.name}
    if "float" in text or ("int" in text and "str" not in text):
        return 7
    return f"v-{parameter.name}"


def _call_args(method: Any) -> tuple[list[Any], dict[str, Any]]:
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for parameter in inspect.signature(method).parameters.values():
        if parameter.kind is parameter.POSITIONAL_OR_KEYWORD:
            args.append(_sample(parameter))
        elif parameter.kind is parameter.KEYWORD_ONLY:
            kwargs[parameter.name] = _sample(parameter)
        elif parameter.kind is parameter.VAR_KEYWORD:
            kwargs["extra_option"] = "x"
    return args, kwargs


class Wire:
    """Records what reaches the host and answers with ``answer``."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.seen: list[tuple[str, dict[str, Any]]] = []

    async def rpc_call(
        self, method: str, plugin_id: str = "", payload: Any = None, **_: Any
    ) -> Any:
        payload = dict(payload or {})
        if method == "cap.call":
            self.seen.append((payload["capability"], dict(payload["args"])))
        else:
            self.seen.append((method, payload))
        return self.answer

    async def call_capability(
        self, plugin_id: str, capability: str, args: dict[str, Any], timeout_ms: int | None
    ) -> Any:
        self.seen.append((capability, dict(args)))
        return self.answer


def _answer_for(path: str) -> dict[str, Any]:
    # Every documented result key at once: each proxy must pick the same one MaiBot's picks.
    keys = set(real_context._CAPABILITY_RESULT_KEYS.values()) | {"accepted", "models"}
    return {"success": True, **{key: f"<{key}>" for key in sorted(keys)}, "accepted": True}


@pytest.mark.parametrize("path", METHODS)
async def test_a_proxy_method_sends_and_returns_what_maibots_does(path: str) -> None:
    real_wire, our_wire = Wire(_answer_for(path)), Wire(_answer_for(path))
    real = real_context.PluginContext("tests.probe", rpc_call=real_wire.rpc_call)
    ours = PluginContext("tests.probe", rpc_call=bridge_rpc_call(our_wire, "tests.probe"))
    args, kwargs = _call_args(_resolve(real, path))

    real_outcome = await _outcome(_resolve(real, path)(*args, **kwargs))
    our_outcome = await _outcome(_resolve(ours, path)(*args, **kwargs))

    assert our_wire.seen == real_wire.seen
    assert our_outcome == real_outcome


async def _outcome(call: Any) -> Any:
    """The value, or the exception type when the proxy refuses the answer (both must agree)."""
    try:
        return await call
    except (TypeError, ValueError) as exc:
        return type(exc)


@pytest.mark.parametrize("path", METHODS)
def test_a_proxy_method_has_maibots_parameters(path: str) -> None:
    real = inspect.signature(_resolve(real_context.PluginContext("p"), path))
    ours = inspect.signature(_resolve(PluginContext("p"), path))

    def shape(signature: inspect.Signature) -> list[tuple[str, Any, Any]]:
        return [(p.name, p.kind, p.default) for p in signature.parameters.values()]

    assert shape(ours) == shape(real)


def test_every_maibot_proxy_exists_on_plughosts_context() -> None:
    ours = PluginContext("p")

    assert [name for name in PROXIES if not hasattr(ours, name)] == []
    assert len(METHODS) > 60


@pytest.mark.parametrize(
    ("capability", "answer", "expected"),
    [
        ("send.text", {"success": True}, True),
        ("send.text", {"success": False, "error": "no stream"}, False),
        ("config.get", {"success": True, "value": "麦麦"}, "麦麦"),
        ("api.call", {"success": True, "result": {"n": 1}}, {"n": 1}),
        ("person.get_id_by_name", {"success": True, "person_id": "p-1"}, "p-1"),
        ("llm.generate", {"success": True, "response": "hi"}, {"success": True, "response": "hi"}),
        ("chat.get_stream_by_group_id", ["not", "wrapped"], ["not", "wrapped"]),
    ],
)
async def test_host_answers_are_unwrapped_like_maibots_sdk(
    capability: str, answer: Any, expected: Any
) -> None:
    real_wire, our_wire = Wire(answer), Wire(answer)
    real = real_context.PluginContext("p", rpc_call=real_wire.rpc_call)
    ours = PluginContext("p", rpc_call=bridge_rpc_call(our_wire, "p"))

    assert await real.call_capability(capability, x=1) == expected
    assert await ours.call_capability(capability, x=1) == expected


async def test_send_with_return_details_gives_the_message_id() -> None:
    wire = Wire({"success": True, "sent": True, "message_id": "m-9"})
    ctx = PluginContext("p", rpc_call=bridge_rpc_call(wire, "p"))

    assert await ctx.send.text("hi", "s-1", return_details=True) == {
        "sent": True,
        "message_id": "m-9",
    }


async def test_an_rpc_timeout_in_the_arguments_is_taken_out_as_maibots_runner_does() -> None:
    seen: list[int | None] = []

    class Bridge:
        async def call_capability(
            self, plugin_id: str, capability: str, args: dict[str, Any], timeout_ms: int | None
        ) -> Any:
            seen.append(timeout_ms)
            assert "rpc_timeout_ms" not in args
            return {"success": True}

    ctx = PluginContext("p", rpc_call=bridge_rpc_call(Bridge(), "p"))

    await ctx.send.text("hi", "s", rpc_timeout_ms=1500)
    await ctx.render.html2png("<b>x</b>", render_timeout_ms=9)

    assert seen == [1500, None]


async def test_a_refused_capability_is_a_runtime_error_as_in_maibot() -> None:
    class Refusing:
        async def call_capability(self, *args: Any) -> Any:
            raise CapabilityError("capability_denied", "plugin p may not call send.text")

    ctx = PluginContext("p", rpc_call=bridge_rpc_call(Refusing(), "p"))

    with pytest.raises(RuntimeError, match=r"may not call send\.text") as caught:
        await ctx.send.text("hi", "s")
    assert isinstance(caught.value, MaiBotCapabilityError)
    assert caught.value.code == "capability_denied"


async def test_only_maibots_raw_host_methods_may_be_called() -> None:
    ctx = PluginContext("p", rpc_call=bridge_rpc_call(Wire({}), "p"))

    with pytest.raises(PermissionError):
        await ctx.call_host_method("plugin.shutdown")
