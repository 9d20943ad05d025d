"""What the host knows about plugins, apart from the processes that run them.

Lives here: plugin folders and their manifests read before any plugin code runs
(``source``), which folder owns each plugin id (``bindings``), the folder
watcher (``watcher``) and the folders it watches (``watch_tree``), the ``ComponentRegistry`` and
``ComponentQueryService`` (``components``, ``query``), command patterns matched
by RE2 (``command_patterns``), the ``PluginToolProvider``
that exposes plugin tools to the registry (``provider``) and the operator's
tool-call grants (``grants``).

May import: ``plughost.tools`` and the leaf modules. Never ``plughost.runners``:
runners are told about plugins, plugins do not know about runners.
"""
