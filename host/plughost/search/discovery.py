"""Which deferred tools a conversation has discovered, and the order tools are sent in.

Discovery state is kept per conversation (session id), outside the message
history: compacting or trimming the history never makes a discovered tool
disappear again, and :meth:`DiscoveryStore.export` / :meth:`DiscoveryStore.restore`
carry it across a restart of the bot.

The state only grows. Once a tool has been sent to the model it stays in the
list, so the ``tools`` prefix of a conversation never changes behind the
model's back; a name whose tool has since gone away is skipped when the list
is assembled, not forgotten, so it comes back if the tool does.

What does not live here: searching (:mod:`plughost.search.service`) and the
definitions' wire shapes (:mod:`plughost.search.strategies`).
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator, Mapping
from typing import Any

__all__ = ["DiscoveryState", "DiscoveryStore", "assemble_tool_names"]

_FORMAT_VERSION = 1


class DiscoveryState:
    """The tools one conversation has discovered, in discovery order, de-duplicated."""

    __slots__ = ("_names", "_seen", "session_id")

    def __init__(self, session_id: str = "", names: Iterable[str] = ()) -> None:
        self.session_id = session_id
        self._names: list[str] = []
        self._seen: set[str] = set()
        self.add(names)

    def __contains__(self, name: object) -> bool:
        return name in self._seen

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(self._names))

    def __len__(self) -> int:
        return len(self._names)

    @property
    def names(self) -> tuple[str, ...]:
        """Every discovered name, first discovery first."""
        return tuple(self._names)

    def add(self, names: Iterable[str]) -> list[str]:
        """Record ``names`` as discovered; names seen before keep their place.

        Returns:
            The names that were new, in the order given.
        """
        added: list[str] = []
        for name in names:
            if name and name not in self._seen:
                self._seen.add(name)
                self._names.append(name)
                added.append(name)
        return added

    def export(self) -> dict[str, Any]:
        """Return the state as a JSON-able dict that :meth:`restore` reads back."""
        return {"session_id": self.session_id, "discovered": list(self._names)}

    @classmethod
    def restore(cls, data: Mapping[str, Any]) -> DiscoveryState:
        """Rebuild a state from :meth:`export`'s output.

        Raises:
            ValueError: If ``data`` is not in the exported shape.
        """
        session_id = data.get("session_id", "")
        if not isinstance(session_id, str):
            raise ValueError("discovery state: 'session_id' must be a string")
        return cls(session_id, _names_of(data.get("discovered", []), f"session {session_id!r}"))


class DiscoveryStore:
    """Discovery states of every conversation, created on first use."""

    def __init__(self) -> None:
        self._states: dict[str, DiscoveryState] = {}

    def __len__(self) -> int:
        return len(self._states)

    def get(self, session_id: str) -> DiscoveryState:
        """Return the state of ``session_id``, creating an empty one the first time.

        An empty session id names no conversation: it gets a new empty state
        that is not kept, so nothing discovered without a session id is ever
        shared between conversations.
        """
        if not session_id:
            return DiscoveryState("")
        state = self._states.get(session_id)
        if state is None:
            state = self._states[session_id] = DiscoveryState(session_id)
        return state

    def export(self) -> dict[str, Any]:
        """Return every conversation's discoveries as a JSON-able dict.

        The shape is ``{"version": 1, "sessions": {session_id: [name, ...]}}``;
        conversations that discovered nothing are left out.
        """
        sessions = {sid: list(state.names) for sid, state in self._states.items() if state}
        return {"version": _FORMAT_VERSION, "sessions": sessions}

    def restore(self, data: Mapping[str, Any]) -> None:
        """Load what :meth:`export` produced, for instance after a restart.

        Restored names go first; names a conversation discovered in this process
        before the restore keep their relative order after them.

        Raises:
            ValueError: If ``data`` is not in the exported shape or has another
                version; nothing is changed then.
        """
        if data.get("version") != _FORMAT_VERSION:
            raise ValueError(
                f"discovery state has version {data.get('version')!r}; "
                f"this plughost reads version {_FORMAT_VERSION}"
            )
        sessions = data.get("sessions")
        if not isinstance(sessions, Mapping):
            raise ValueError("discovery state: 'sessions' must map session ids to name lists")
        restored = {
            str(sid): _names_of(names, f"session {sid!r}") for sid, names in sessions.items()
        }
        for sid, names in restored.items():
            if not sid:
                continue  # an empty session id names no conversation
            current = self._states.get(sid)
            merged = DiscoveryState(sid, names)
            if current is not None:
                merged.add(current.names)
            self._states[sid] = merged


def assemble_tool_names(
    core: Iterable[str],
    discovered: Iterable[str],
    available: Container[str],
    *,
    search_tool: str | None = None,
) -> list[str]:
    """Order the tool names of one turn so that the list only ever grows at its end.

    Args:
        core: Tools always sent; they come first, sorted by name.
        discovered: Discovered tools, in discovery order; they come last.
        available: Names that exist right now; a discovered name not in it
            (its plugin was unloaded, say) is skipped.
        search_tool: The search tool's name, placed between the two groups;
            None when search is not offered.

    Returns:
        Each name once: core, then the search tool, then discovered tools.
    """
    names = sorted(set(core))
    if search_tool is not None and search_tool not in names:
        names.append(search_tool)
    seen = set(names)
    for name in discovered:
        if name not in seen and name in available:
            seen.add(name)
            names.append(name)
    return names


def _names_of(value: Any, where: str) -> list[str]:
    if not isinstance(value, list | tuple) or not all(isinstance(n, str) for n in value):
        raise ValueError(f"discovery state: {where} must list tool names as strings")
    return list(value)
