"""The sizes a tool's definition may have, whoever declares it: a plugin or an MCP server.

A description is read by every model that sees the tool and indexed by tool
search; a schema is checked at every call. Both are bounded where the host
first sees a definition: a plugin's in its runner's report
(:mod:`plughost.runners.reports`), an upstream MCP server's when its tool list
is converted (:mod:`plughost.mcp.tool_bounds`).
"""

from __future__ import annotations

from typing import Final

__all__ = ["MAX_DESCRIPTION", "MAX_SCHEMA_BYTES", "MAX_TOOLS"]

MAX_DESCRIPTION: Final = 16 * 1024
"""Characters of one tool description (each of description, brief and detailed)."""
MAX_SCHEMA_BYTES: Final = 64 * 1024
"""Bytes of one tool's parameter schema, as JSON."""
MAX_TOOLS: Final = 512
"""Tools one plugin may declare; as many components, resources and prompts (each kind)."""
