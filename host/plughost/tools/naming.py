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
   keeps it, whatever order the tools arrive in. Names that a model could
   mistake for one another count as the same name (:func:`lookalike_key`):
   ``get_weather``, ``Get_Weather``, ``get-weather`` and ``getWeather`` are
   one name, and so are ``list_files`` and ``Iist_fi1es``.
3. **The first keeps a contested name.** When two or more tools want the same
   name (or look-alikes of it), the first of them in the order given keeps it
   and the others get ``<qualifier>_<preferred>`` (for example ``search`` and
   ``docs_search``).
   The caller decides what "first" means: the plugin tool layer passes tools
   in the order it first saw them, so the first plugin keeps the plain name
   for as long as it stays loaded, reloads included, and the last one to
   register never silently takes it over.
4. **Hash as the last resort.** A qualified name that still collides (with a
   unique name, with another qualified one, or with a name the caller reserves)
   gets ``_`` and the first 8 hex characters of the SHA-1 of the tool's ``tool_id``.

Model-facing names are ASCII (rule 1), so look-alikes are a matter of case,
separators and the few ASCII characters common fonts draw alike; the key still
folds Unicode (NFKC, casefold) for names an embedder gives its own tools.

What does not live here: routing a name to its provider (the registry) and
deciding which tools exist (the providers).
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

__all__ = [
    "MAX_NAME_LENGTH",
    "NameRequest",
    "lookalike_key",
    "qualified_name",
    "resolve_names",
    "sanitize_name",
]

MAX_NAME_LENGTH = 64
"""The longest tool name the major model APIs accept."""

_HASH_LENGTH = 8
_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_UNDERSCORES = re.compile(r"_{2,}")
# Unicode's confusables among ASCII letters and digits (confusables.txt): 0/O, 1/l/I
# (and i, which casefolding cannot tell from I), rn/m, vv/w, cl/d.
_LOOKALIKE = str.maketrans({"0": "o", "1": "l", "i": "l"})
_LOOKALIKE_PAIRS = (("rn", "m"), ("vv", "w"), ("cl", "d"))


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


@functools.lru_cache(maxsize=16384)  # every merge asks again for the same names
def lookalike_key(name: str) -> str:
    """What a model reads in ``name``: two names with one key are one name to it.

    Compatibility forms are folded (NFKC: full-width letters, ligatures), then
    case; every character but letters and digits is dropped (so ``-``, ``_`` and
    none at all are alike); the ASCII characters fonts draw alike become one
    (``0``/``o``; ``1``, ``l``, ``I`` and ``i``; ``rn``/``m``; ``vv``/``w``;
    ``cl``/``d``).
    """
    folded = unicodedata.normalize("NFKC", name).casefold()
    key = "".join(char for char in folded if char.isalnum()).translate(_LOOKALIKE)
    for pair, single in _LOOKALIKE_PAIRS:
        key = key.replace(pair, single)
    return key or name


def qualified_name(*parts: str) -> str:
    """Join name parts with ``_`` and sanitize the result.

    Empty parts are skipped, so ``qualified_name("", "search")`` is ``search``.
    """
    return sanitize_name("_".join(part for part in parts if part))


def resolve_names(
    entries: Sequence[NameRequest], *, reserved: Collection[str] = ()
) -> dict[str, str]:
    """Give every tool a unique model-facing name (see the module rules).

    Args:
        entries: The tools to name, first claimant first: of the tools that
            want one name (or look-alikes of it), the first keeps it.
        reserved: Names no qualified name may be (or look like); a tool that
            asks for one of them outright still gets it, for the caller to refuse.

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
    first: dict[str, str] = {}  # look-alike key -> the tool_id that asked for it first
    for entry in entries:
        first.setdefault(lookalike_key(bases[entry.tool_id]), entry.tool_id)
    names = {tool_id: bases[tool_id] for tool_id in first.values()}
    contested = [entry for entry in entries if entry.tool_id not in names]
    qualified = {e.tool_id: qualified_name(e.qualifier, e.preferred) for e in contested}
    taken = {lookalike_key(name) for name in (*names.values(), *reserved)}
    names.update(_settle(qualified, taken=taken))
    return {entry.tool_id: names[entry.tool_id] for entry in entries}


def _settle(qualified: dict[str, str], *, taken: set[str]) -> dict[str, str]:
    """Keep qualified names that are free; hash-suffix the rest, in tool_id order.

    ``taken`` holds look-alike keys, so no settled name looks like another.
    """
    keys = {tool_id: lookalike_key(name) for tool_id, name in qualified.items()}
    counts = Counter(keys.values())
    settled = {
        tool_id: name
        for tool_id, name in qualified.items()
        if counts[keys[tool_id]] == 1 and keys[tool_id] not in taken
    }
    taken = taken | {keys[tool_id] for tool_id in settled}
    for tool_id in sorted(set(qualified) - set(settled)):
        name = _unique_variant(qualified[tool_id], tool_id, taken)
        settled[tool_id] = name
        taken.add(lookalike_key(name))
    return settled


def _unique_variant(name: str, tool_id: str, taken: set[str]) -> str:
    full = _sha1(tool_id)
    for length in range(_HASH_LENGTH, len(full) + 1, 4):
        candidate = _with_suffix(name, full[:length])
        if lookalike_key(candidate) not in taken:
            return candidate
    # Only reachable with a SHA-1 collision between tool ids; a counter still ends it.
    counter = 2
    while (
        lookalike_key(candidate := _with_suffix(name, f"{full[:_HASH_LENGTH]}_{counter}")) in taken
    ):
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
