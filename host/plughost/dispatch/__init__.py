"""Host-side dispatch of plugins' commands, event handlers, hook handlers and APIs.

Lives here: calling one component in its runner under a deadline, never raising
(``calls``), matching a message against commands (``commands``), emitting an
event to its handlers (``events``), running a named hook chain (``hooks``), and
plugin APIs, for the embedder and for plugins' ``ctx.api.call`` under the
operator's grants (``apis``), and the bounded set a plugin publishes while it
runs (``dynamic_apis``). ``service`` puts them together behind the
``PluginHost`` methods ``dispatch_command``, ``emit_event``, ``run_hook`` and
``call_api``.

Every dispatcher reads the ``ComponentRegistry`` at the start of a call, so a
hot reload that swaps a plugin's components is seen whole or not at all. Order
is deterministic: by the ranks MaiBot defines (weight, mode, order slot), then
plugin id, then component name. A handler that fails, times out or crashes its
runner costs its own result only.

May import: ``plughost.plugins``, ``plughost.runners``, ``plughost.tools`` and the
leaf modules. The façade (``plughost.host``) imports this package, never the reverse.
"""
