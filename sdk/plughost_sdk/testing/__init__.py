"""The plugin author's test kit: load one plugin folder in a real runner and call its tools.

::

    from plughost_sdk.testing import PluginTestHarness

    async def test_notify_posts_to_the_chat() -> None:
        async with PluginTestHarness("plugins/notifier") as harness:
            result = await harness.call("notify", {"text": "hi"}, stream_id="chat-1")
        assert result.success
        assert harness.sent[0].text == "[bot] hi"

:class:`PluginTestHarness` is a minimal host for one plugin. It starts
``python -m plughost_runner`` (the runner the host uses, started by module
name because the SDK never imports it), speaks the protocol of
:mod:`plughost_sdk.wire` over a real ZeroMQ socket, and answers the plugin's
capability calls from stubs after checking that the manifest lists them, as
the host does. ``ctx.send.*`` calls are recorded in
:attr:`PluginTestHarness.sent`; ``ctx.call_tool`` runs the plugin's own tools
(stub ``tools.call`` to answer for other tools); any other capability must be
stubbed with :meth:`PluginTestHarness.stub_capability`.

What it leaves out: restarting a crashed runner, watching files, scrubbing the
environment, and casting argument types (the host turns ``"60"`` into ``60``
for an integer parameter; pass the values the handler should receive).

It needs the ``testing`` extra (``pip install "plughost-sdk[testing]"``: pyzmq
and plughost-runner). pyzmq is imported when a harness starts, not with this module.
"""

from plughost_sdk.testing.harness import (
    CapabilityStub,
    LoadFailure,
    PluginLog,
    PluginTestHarness,
    SentMessage,
)

__all__ = ["CapabilityStub", "LoadFailure", "PluginLog", "PluginTestHarness", "SentMessage"]
