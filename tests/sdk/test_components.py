"""Commands, event handlers, hooks, APIs and the rest: declared as MaiBot's SDK 2.16 declares them.

The differential tests run the same declarations through the real
``maibot_sdk`` (when installed) and through plughost_sdk and compare what
``get_components()`` reports, the decorator signatures and the enum values.
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace
from typing import Any

import pytest

import plughost_sdk
from plughost_sdk import (
    API,
    Command,
    ComponentDeclaration,
    ErrorPolicy,
    EventHandler,
    EventType,
    HomeCard,
    HookHandler,
    HookMode,
    HookOrder,
    LLMProvider,
    MessageGateway,
    Plugin,
    PluginDeclarationError,
    ReplyExtension,
    Tool,
    WorkflowStep,
)
from plughost_sdk import types as our_types
from plughost_sdk.components import (
    collect_components,
    collect_llm_providers,
    normalize_component_type,
)

DECORATORS = [
    "API",
    "Command",
    "EventHandler",
    "HomeCard",
    "HookHandler",
    "LLMProvider",
    "MessageGateway",
    "ReplyExtension",
    "WorkflowStep",
]
ENUMS = [
    "ComponentType",
    "ActivationType",
    "ChatMode",
    "EventType",
    "MessageGatewayRouteType",
    "HookMode",
    "HookOrder",
    "ModifyFlag",
    "ErrorPolicy",
]


def _maibot() -> Any:
    return pytest.importorskip(
        "maibot_sdk", reason="the real maibot-plugin-sdk 2.16 is needed for differential tests"
    )


def _declare(ns: Any, base: type) -> type:
    """One plugin class with every served component kind, built from decorators in ``ns``."""

    class Declared(base):  # type: ignore[valid-type,misc]
        @ns.Command("weather", description="Weather", pattern=r"^/w (?P<city>\w+)", aliases=["/wx"])
        async def handle_weather(self, **kwargs: Any) -> Any:
            return None

        @ns.Command("plain", intercept_message_level=1)
        async def handle_plain(self, **kwargs: Any) -> Any:
            return None

        @ns.EventHandler(
            "guard",
            description="Drops spam",
            event_type=ns.EventType.ON_MESSAGE_PRE_PROCESS,
            intercept_message=True,
            weight=100,
        )
        async def on_pre(self, **kwargs: Any) -> Any:
            return None

        @ns.EventHandler("started", event_type="on_start")
        async def on_start_event(self, **kwargs: Any) -> Any:
            return None

        @ns.HookHandler(
            "maisaka.planner.before_request",
            name="rewrite",
            mode=ns.HookMode.BLOCKING,
            order=ns.HookOrder.EARLY,
            timeout_ms=500,
            error_policy=ns.ErrorPolicy.ABORT,
            note="x",
        )
        async def rewrite_request(self, **kwargs: Any) -> Any:
            return None

        @ns.HookHandler("maisaka.planner.after_response", mode=ns.HookMode.OBSERVE)
        async def watch_response(self, **kwargs: Any) -> Any:
            return None

        @ns.API("render", description="Render", version=2, public=True, timeout_ms=5000)
        async def render_api(self, **kwargs: Any) -> Any:
            return None

        @ns.HomeCard("status", " Status ", content=[{"type": "text", "text": "ok"}], width="Wide")
        async def status_card(self, **kwargs: Any) -> Any:
            return None

    return Declared


def _namespace(*modules: Any) -> SimpleNamespace:
    names = [*DECORATORS, *ENUMS]
    return SimpleNamespace(**{n: getattr(m, n) for m in modules for n in names if hasattr(m, n)})


def _by_key(components: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(c["type"], c["name"]): c for c in components}


def test_get_components_reports_what_maibots_sdk_reports() -> None:
    maibot = _maibot()
    from maibot_sdk import types as maibot_types

    theirs = _declare(_namespace(maibot, maibot_types), maibot.MaiBotPlugin)
    ours = _declare(_namespace(plughost_sdk, our_types), Plugin)

    expected = _by_key(theirs().get_components())
    got = _by_key(ours().get_components())

    assert got == expected
    assert len(got) == 8


def test_components_are_listed_in_method_name_order_like_maibot() -> None:
    plugin_class = _declare(_namespace(plughost_sdk, our_types), Plugin)

    handlers = [c["metadata"]["handler_name"] for c in plugin_class().get_components()]

    assert handlers == sorted(handlers)


@pytest.mark.parametrize("name", DECORATORS)
def test_decorator_signature_matches_maibots(name: str) -> None:
    maibot = _maibot()

    theirs = inspect.signature(getattr(maibot, name)).parameters
    ours = inspect.signature(getattr(plughost_sdk, name)).parameters

    assert [(p.name, p.kind) for p in ours.values()] == [(p.name, p.kind) for p in theirs.values()]
    for key, parameter in theirs.items():
        assert ours[key].default == parameter.default, key


@pytest.mark.parametrize("name", ENUMS)
def test_enum_has_maibots_members_and_values(name: str) -> None:
    from maibot_sdk import types as maibot_types

    _maibot()
    theirs = {m.name: m.value for m in getattr(maibot_types, name)}
    ours = {m.name: m.value for m in getattr(our_types, name)}

    assert ours == theirs


def test_enum_members_equal_their_wire_strings() -> None:
    assert EventType.ON_MESSAGE == "on_message"
    assert HookMode("observe") is HookMode.OBSERVE
    assert ErrorPolicy.ABORT == "abort"
    assert HookOrder.LATE.value == "late"


@pytest.mark.parametrize(
    ("decorator", "kind"),
    [
        (lambda: ReplyExtension("qq_out"), "ReplyExtension"),
    ],
    ids=["ReplyExtension"],
)
def test_unsupported_component_is_refused_naming_plugin_component_and_method(
    decorator: Any, kind: str
) -> None:
    with pytest.raises(PluginDeclarationError) as caught:

        class Adapter(Plugin):
            @decorator()
            async def gateway(self, **kwargs: Any) -> None:
                return None

    message = str(caught.value)
    assert f"plugin Adapter: @{kind}('qq_out') on method 'gateway'" in message
    assert "not supported by plughost" in message


def test_a_gateway_is_a_component_and_a_provider_is_listed_apart() -> None:
    class Adapter(Plugin):
        @MessageGateway("recv", name="qq_in", platform="qq")
        async def inbound(self, **kwargs: Any) -> None:
            return None

        @LLMProvider("echo", version="2")
        async def model(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
            return {}

    components = [
        (d.name, d.type.value, d.metadata["route_type"]) for d in collect_components(Adapter)
    ]

    assert components == [("qq_in", "MESSAGE_GATEWAY", "receive")]
    assert collect_llm_providers(Adapter) == [
        {
            "client_type": "echo",
            "name": "echo",
            "description": "",
            "version": "2",
            "metadata": {"handler_name": "model"},
        }
    ]


def test_two_providers_of_one_client_type_are_refused_naming_both_methods() -> None:
    class Twice(Plugin):
        @LLMProvider("echo")
        async def first(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
            return {}

        @LLMProvider("echo")
        async def second(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
            return {}

    with pytest.raises(PluginDeclarationError, match="method 'first' already provides"):
        collect_llm_providers(Twice)


def test_workflow_step_raises_at_decoration_naming_the_replacement() -> None:
    with pytest.raises(RuntimeError, match="HookHandler"):
        WorkflowStep("old.step")


def test_hook_handler_without_a_hook_name_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="hook name"):
        HookHandler("  ")


def test_hook_handler_name_defaults_to_the_method_name() -> None:
    class Hooks(Plugin):
        @HookHandler("chat.receive")
        async def on_receive(self, **kwargs: Any) -> None:
            return None

    (declaration,) = Hooks.component_declarations()
    assert declaration.name == "on_receive"
    assert declaration.metadata["hook"] == "chat.receive"


def test_an_unknown_event_type_is_a_value_error_listing_the_known_ones() -> None:
    with pytest.raises(ValueError, match="on_message_pre_process"):
        EventHandler("x", event_type="on_mesage")  # type: ignore[arg-type]


def test_an_unknown_gateway_direction_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="send, receive, duplex"):
        MessageGateway("sideways")


def test_two_commands_with_one_name_are_refused() -> None:
    with pytest.raises(PluginDeclarationError, match="already used by method 'first'"):

        class Twice(Plugin):
            @Command("go")
            async def first(self, **kwargs: Any) -> None:
                return None

            @Command("go")
            async def second(self, **kwargs: Any) -> None:
                return None


def test_a_command_and_a_tool_may_share_a_name() -> None:
    class Both(Plugin):
        @Command("weather", pattern="^/weather")
        async def command(self, **kwargs: Any) -> None:
            return None

        @Tool("weather", brief_description="Weather for a city")
        async def tool(self, **kwargs: Any) -> None:
            return None

    assert [d.name for d in Both.tool_declarations()] == ["weather"]
    assert [d.name for d in Both.component_declarations()] == ["weather"]


def test_a_subclass_inherits_and_may_override_components() -> None:
    class Base(Plugin):
        @Command("hello", pattern="^/hello")
        async def hello(self, **kwargs: Any) -> None:
            return None

    class Child(Base):
        async def hello(self, **kwargs: Any) -> None:  # no longer a command
            return None

        @API("ping")
        async def ping(self, **kwargs: Any) -> None:
            return None

    assert [d.name for d in Base.component_declarations()] == ["hello"]
    assert [d.name for d in Child.component_declarations()] == ["ping"]


def test_declaration_round_trips_through_its_wire_form() -> None:
    class One(Plugin):
        @API("render", public=True)
        async def render(self, **kwargs: Any) -> None:
            return None

    (declaration,) = One.component_declarations()
    again = ComponentDeclaration.from_wire(declaration.to_wire())

    assert again == declaration
    assert again.handler_name == "render"


def test_component_types_are_read_in_either_case_and_workflow_step_is_refused() -> None:
    assert normalize_component_type("event_handler") == "EVENT_HANDLER"
    with pytest.raises(ValueError, match="HOOK_HANDLER"):
        normalize_component_type("workflow_step")
    with pytest.raises(ValueError, match="unknown component type"):
        normalize_component_type("widget")


def test_home_card_needs_a_name_and_a_title() -> None:
    with pytest.raises(ValueError, match="title"):
        HomeCard("status", "")
