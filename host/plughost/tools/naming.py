"""Model-facing tool names: sanitizing, qualifying and resolving collisions.

Model APIs accept tool names made of ``[A-Za-z0-9_-]``, at most 64 characters.
Tools, however, come from plugins, MCP servers and built-ins that know nothing
of each other, so their natural names may be invalid or may collide. This
module turns those natural names into model-facing ones; a tool's stable
identity stays its ``tool_id`` and is never derived from the name.

The rules:

1. **Sanitize.** Every character outside ``[A-Za-z0-9_-]`` becomes ``_``; runs
   of ``_`` collapse to one; ``_`` at either end is dropped. A name that ends
   up empty becomes ``tool_`` plus a hash. A name longer than 64 characters
   keeps a prefix and ends with ``_`` and the first 8 hex characters of the
   SHA-1 of the full raw name, so the result is stable across runs and two
   long names that share a prefix stay distinct.
2. **Unique names are kept.** A tool whose preferred name no other tool wants
   keeps it, whatever order the tools arrive in.
3. **The first keeps a contested name.** When two or more tools want the same
   name, the first of them in the order given keeps it and the others get
   ``<qualifier>_<preferred>`` (for example ``search`` and ``docs_search``).
   The caller decides what "first" means: the plugin tool layer passes tools
   in the order it first saw them, so the first plugin keeps the plain name
   for as long as it stays loaded, reloads included, and the last one to
   register never silently takes it over.
4. **Hash as the last resort.** A qualified name that still collides (with a
   unique name or with another qualified one) gets ``_`` and the first 8 hex
   characters of the SHA-1 of the tool's ``tool_id``.

What does not live here: routing a name to its provider (the registry) and
deciding which tools exist (the providers).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "MAX_NAME_LENGTH",
    "NameRequest",
    "qualified_name",
    "resolve_names",
    "sanitize_name",
]

MAX_NAME_LENGTH = 64
"""The longest tool name the major model APIs accept."""

_HASH_LENGTH = 8
_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_UNDERSCORES = re.compile(r"_{2,}")


@dataclass(frozen=True, slots=True)
class NameRequest:
    """One tool asking for a model-facing name.

    Attributes:
        tool_id: The tool's stable identity (``source:plugin:tool``); unique.
        preferred: The name the tool would like, sanitized before use.
        qualifier: What tells it apart when the name is contested, usually
            the plugin id or the MCP server name.
    """

    tool_id: str
    preferred: str
    qualifier: str


def sanitize_name(raw: str) -> str:
    """Turn any string into a valid model-facing tool name.

    Args:
        raw: The natural name, possibly with spaces, dots, colons or unicode.

    Returns:
        A non-empty name of ``[A-Za-z0-9_-]``, at most 64 characters; the same
        input always gives the same output.
    """
    cleaned = _UNDERSCORES.sub("_", _INVALID.sub("_", raw)).strip("_")
    if not cleaned:
        return f"tool_{_digest(raw)}"
    if len(cleaned) <= MAX_NAME_LENGTH:
        return cleaned
    return _with_suffix(cleaned, _digest(raw))


def qualified_name(*parts: str) -> str:
    """Join name parts with ``_`` and sanitize the result.

    Empty parts are skipped, so ``qualified_name("", "search")`` is ``search``.
    """
    return sanitize_name("_".join(part for part in parts if part))


def resolve_names(entries: Sequence[NameRequest]) -> dict[str, str]:
    """Give every tool a unique model-facing name (see the module rules).

    Args:
        entries: The tools to name, first claimant first: of the tools that
            want one name, the first keeps it.

    Returns:
        ``tool_id -> name`` in the order of ``entries``; all names distinct.

    Raises:
        ValueError: If two entries share a ``tool_id``.
    """
    ids = Counter(entry.tool_id for entry in entries)
    duplicated = sorted(tool_id for tool_id, count in ids.items() if count > 1)
    if duplicated:
        raise ValueError(f"tool ids must be unique; repeated: {', '.join(duplicated)}")
    bases = {entry.tool_id: sanitize_name(entry.preferred) for entry in entries}
    first: dict[str, str] = {}  # name -> the tool_id that asked for it first
    for entry in entries:
        first.setdefault(bases[entry.tool_id], entry.tool_id)
    names = {tool_id: base for base, tool_id in first.items()}
    contested = [entry for entry in entries if entry.tool_id not in names]
    qualified = {e.tool_id: qualified_name(e.qualifier, e.preferred) for e in contested}
    names.update(_settle(qualified, taken=set(names.values())))
    return {entry.tool_id: names[entry.tool_id] for entry in entries}


def _settle(qualified: dict[str, str], *, taken: set[str]) -> dict[str, str]:
    """Keep qualified names that are free; hash-suffix the rest, in tool_id order."""
    counts = Counter(qualified.values())
    settled = {
        tool_id: name
        for tool_id, name in qualified.items()
        if counts[name] == 1 and name not in taken
    }
    taken = taken | set(settled.values())
    for tool_id in sorted(set(qualified) - set(settled)):
        name = _unique_variant(qualified[tool_id], tool_id, taken)
        settled[tool_id] = name
        taken.add(name)
    return settled


def _unique_variant(name: str, tool_id: str, taken: set[str]) -> str:
    full = _sha1(tool_id)
    for length in range(_HASH_LENGTH, len(full) + 1, 4):
        candidate = _with_suffix(name, full[:length])
        if candidate not in taken:
            return candidate
    # Only reachable with a SHA-1 collision between tool ids; a counter still ends it.
    counter = 2
    while (candidate := _with_suffix(name, f"{full[:_HASH_LENGTH]}_{counter}")) in taken:
        counter += 1
    return candidate


def _with_suffix(name: str, suffix: str) -> str:
    room = MAX_NAME_LENGTH - len(suffix) - 1
    prefix = name[:room].rstrip("_") or "tool"
    return f"{prefix}_{suffix}"


def _digest(raw: str) -> str:
    return _sha1(raw)[:_HASH_LENGTH]


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()
