"""The tool layer: one registry that routes every call, whatever its source.

Lives here: the ``ToolProvider`` protocol, ``ToolRegistry`` (and what a call that
could not run returns, ``call_failures``), argument casting and
JSON Schema validation, declared defaults, provider-specific definitions (OpenAI,
Anthropic), the sizes a tool's definition may have (``declaration_limits``),
batching by concurrency class, built-in tools, tool naming and the
names the host keeps from plugins (``reserved``), model responses' tool calls to
invocations and back (``model_calls``), and the history helpers that turn
results into model messages (``history``, tagged messages in ``messages``,
compaction of old results in ``compaction``).

May import: ``plughost_sdk`` and the leaf modules ``plughost.settings``,
``plughost.events`` and ``plughost.redaction``. Nothing here knows about plugins,
runners, search or MCP; those sit above and plug in as providers.

Import the module you need (``plughost.tools.registry``); this package re-exports
nothing, so importing one module never drags in the others.
"""
