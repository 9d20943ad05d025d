"""The whole plughost exception tree, shared by the SDK, the runner and the host.

::

    PlugHostError
    ├── PluginError              the plugin is at fault
    │   ├── PluginDeclarationError  a @Tool/@Action declaration is invalid
    │   ├── ManifestError           _manifest.json or config.toml is invalid
    │   ├── PluginLoadError         import error, create_plugin() or on_load raised
    │   └── ToolError               raised on purpose by a tool; its message goes to the LLM
    ├── CapabilityError          a ctx.* call the host refused or could not serve
    ├── RunnerError              the child process or its socket
    │   ├── RunnerStartError
    │   ├── RunnerCrashedError
    │   └── RunnerTimeoutError
    └── ProtocolError            bad frame, version mismatch, bad token

Caller mistakes (a wrong argument to an API) raise ``ValueError``/``TypeError``
instead: those are bugs in the caller, not conditions to handle.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CapabilityError",
    "ManifestError",
    "PlugHostError",
    "PluginDeclarationError",
    "PluginError",
    "PluginLoadError",
    "ProtocolError",
    "RunnerCrashedError",
    "RunnerError",
    "RunnerStartError",
    "RunnerTimeoutError",
    "ToolError",
]


class PlugHostError(Exception):
    """Base of every error plughost raises on purpose."""


class PluginError(PlugHostError):
    """The plugin is at fault: its code, its declarations or its files."""


class PluginDeclarationError(PluginError):
    """A ``@Tool`` or ``@Action`` declaration is invalid.

    The message names the plugin class, the tool and, where relevant, the
    parameter, so the author can find the line without a traceback.
    """


class ManifestError(PluginError):
    """A plugin's ``_manifest.json`` or ``config.toml`` is invalid.

    Attributes:
        path: The file at fault.
        problems: One human-readable line per problem: field, reason, fix.
    """

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path = path
        self.problems = list(problems)
        super().__init__(f"{path}: " + "; ".join(self.problems))


class PluginLoadError(PluginError):
    """A plugin could not be loaded: import error, bad factory, ``on_load`` raised."""


class ToolError(PluginError):
    """Raise from a tool handler to fail the call with a message meant for the model.

    Unlike any other exception, a ``ToolError`` is not treated as a bug: its
    message is passed to the model verbatim so it can change its approach.

    Args:
        message: What went wrong and, ideally, what the model should try instead.
        details: Optional structured data kept in the result's metadata.
    """

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.details = dict(details or {})


class CapabilityError(PlugHostError):
    """A ``ctx.*`` capability call failed: denied, not provided, or raised in the host.

    Attributes:
        code: The wire error code (``capability_denied``, ``capability_not_provided``...).
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class RunnerError(PlugHostError):
    """The runner child process or its socket failed."""


class RunnerStartError(RunnerError):
    """A runner did not reach READY: it exited, never said hello, or timed out."""


class RunnerCrashedError(RunnerError):
    """A runner died while calls were in flight."""


class RunnerTimeoutError(RunnerError):
    """A call to a runner passed its deadline."""


class ProtocolError(PlugHostError):
    """A frame that does not follow the wire protocol: garbage, wrong version, bad token."""
