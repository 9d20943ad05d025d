"""Loading and calling plugins inside the runner.

``loader`` imports a plugin folder and brings it to life (module, factory, ctx,
configuration, ``on_load``), or says which stage failed and why; ``invoker`` runs
one call of a plugin's handler (sync or async, under its deadline) and holds
:class:`~plughost_runner.plugins.invoker.Handler`, a tool's bound method; ``components``
finds a plugin's commands, event handlers, hooks and APIs and reads what they return.

May import: ``process`` and ``maibot``. Inside, ``loader`` imports ``components``
and ``invoker``, and ``components`` imports ``invoker``; never the other way.
"""
