"""The bounds an upstream MCP server's tool definitions are held to: a plugin's.

An upstream server is untrusted, as a plugin is, and its tool definitions go
where a plugin's do: into every listing, into the search index, to every model.
One tool with a description of megabytes made each listing and each search
take seconds. So a server's tools get the bounds of
:mod:`plughost.tools.declaration_limits`, checked when its list is converted
(:mod:`plughost.mcp.provider`):

- its name, title and description: :data:`MAX_DESCRIPTION` characters each;
- its input and output schema: :data:`MAX_SCHEMA_BYTES` bytes of JSON each;
- the whole definition (annotations, icons, ``_meta`` included):
  :data:`MAX_DEFINITION_BYTES` bytes of JSON;
- :data:`MAX_TOOLS` tools per server; those listed after are refused.

A plugin with a tool over a bound is refused whole; a server's tool over a bound
is refused alone (its other tools are served), with a warning naming the
server, the tool and the bound, and the same sentence in the server's status
(``ServerStatus.refused``). Nothing is cut: a shortened description or schema
would be a definition the server never gave.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

import mcp_types as types

from plughost.tools.declaration_limits import MAX_DESCRIPTION, MAX_SCHEMA_BYTES, MAX_TOOLS

__all__ = ["MAX_DEFINITION_BYTES", "bounded_tools"]

log = logging.getLogger(__name__)

MAX_DEFINITION_BYTES = 4 * MAX_SCHEMA_BYTES
"""Bytes of one whole tool definition, as JSON (the bound of a plugin's other declarations)."""
_SHOWN_NAME = 80
"""Characters of a refused tool's name quoted in its reason."""


def bounded_tools(
    server: str, tools: Sequence[types.Tool]
) -> tuple[list[types.Tool], tuple[str, ...]]:
    """Split a server's tools into those within bounds and a reason for each other one.

    Args:
        server: The server's name, for the reasons.
        tools: Its tools, as listed.

    Returns:
        The tools kept, in their order, and one sentence per refused tool (also logged).
    """
    kept: list[types.Tool] = []
    refused: list[str] = []
    for tool in tools[:MAX_TOOLS]:
        problem = _problem(tool)
        if problem is None:
            kept.append(tool)
        else:
            refused.append(f"tool {tool.name[:_SHOWN_NAME]!r} refused: {problem}")
    if len(tools) > MAX_TOOLS:
        refused.append(
            f"{len(tools) - MAX_TOOLS} tools refused: the server lists {len(tools)}, over the "
            f"limit of {MAX_TOOLS} per server"
        )
    for reason in refused:
        log.warning("mcp server tool over a bound server=%s %s", server, reason)
    return kept, tuple(refused)


def _problem(tool: types.Tool) -> str | None:
    """Which bound ``tool`` breaks, or None."""
    annotations = tool.annotations
    texts = {
        "name": tool.name,
        "title": tool.title,
        "annotations title": annotations.title if annotations is not None else None,
        "description": tool.description,
    }
    for field, text in texts.items():
        if text is not None and len(text) > MAX_DESCRIPTION:
            return (
                f"its {field} is {len(text):,} characters, over the limit of "
                f"{MAX_DESCRIPTION:,} (a model reads all of it on every turn)"
            )
    schemas = {"input schema": tool.input_schema, "output schema": tool.output_schema}
    for field, schema in schemas.items():
        size = _json_size(schema)
        if size is None:
            return f"its {field} is nested too deeply"
        if size > MAX_SCHEMA_BYTES:
            return f"its {field} is {size:,} bytes of JSON, over the limit of {MAX_SCHEMA_BYTES:,}"
    whole = len(tool.model_dump_json(by_alias=True, exclude_none=True))
    if whole > MAX_DEFINITION_BYTES:
        return (
            f"its definition is {whole:,} bytes of JSON, over the limit of {MAX_DEFINITION_BYTES:,}"
        )
    return None


def _json_size(schema: object) -> int | None:
    """Bytes of ``schema`` as JSON; None if it is nested too deeply to write out."""
    if schema is None:
        return 0
    try:
        return len(json.dumps(schema, default=str))
    except RecursionError:
        return None
