"""The ``plughost`` command line: ``serve``, ``tools``, ``call``, ``search``, ``new``, ``check``.

Lives here: the ``plughost`` group with ``serve``, ``new`` and ``check`` (``main``),
the one-shot commands that ask a short-lived host (``one_shot_commands``) and the
machinery they share (``one_shot``), the options and exit codes every command shares
(``options``), ``runner-credentials`` (``credentials``), terminal output (``console``),
the serve loop (``serve``) and how it starts (``serve_start``), its TOML
configuration (``serve_config``) and what keeps its tool catalogue true
(``serve_catalogue``), plugin
scaffolding (``scaffold``), the pre-deploy checker (``checker``, ``component_checks``)
and the quick exit after a command (``quick_exit``).

May import everything. Start-up time matters here: ``main`` imports what a command
needs inside that command, so ``plughost --help`` never imports MCP, the JSON Schema
validator or the runner machinery; the modules ``main`` imports (``options``,
``one_shot``, ``one_shot_commands``, ``credentials``) import only click at the top too.
"""
