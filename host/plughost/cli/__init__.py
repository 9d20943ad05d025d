"""The ``plughost`` command line: ``serve``, ``tools``, ``call``, ``search``, ``new``, ``check``.

Lives here: the click commands (``main``), terminal output (``console``), the serve
loop (``serve``) and its TOML configuration (``serve_config``), plugin scaffolding
(``scaffold``) and the pre-deploy checker (``checker``).

May import everything. Start-up time matters here: ``main`` imports what a command
needs inside that command, so ``plughost --help`` never imports MCP, the JSON Schema
validator or the runner machinery.
"""
