"""Which folder owns each plugin id: decided by the host, kept in its data directory.

A plugin's id names its data (``<data_dir>/<id>``), its temp directory, its
folder view and every grant the operator wrote for it, so whoever claims an id
gets all of that. The id in a ``_manifest.json`` is the plugin's word, not the
operator's, and a new folder (or an edited manifest) that claims an installed
plugin's id must not take any of it. So the first time an id loads, the host
binds it to that folder (its resolved path) in ``<data_dir>/.bindings.json``,
a file no runner may write (the sandbox lets a runner write only its own
directories below ``data_dir``), and from then on:

- at start, a bound id goes to its folder; every other folder claiming it is
  refused, with both folders and the fix named;
- an id no folder owns yet that several folders claim is refused to all of them:
  the host never picks one by the order of their names;
- an id whose folder is gone (the operator moved or renamed it) passes, with its
  data, to the only folder that claims it, with a warning; two claimants are refused;
- while serving, a folder whose manifest takes another folder's id, or a new
  folder claiming a taken id, is refused, and the owner keeps serving;
- an id remote runners serve is bound to them (first served, first bound) while
  a credential still allows it, and an id a local folder claims is refused to them.

Ids that differ only in case are one claim: on a case-insensitive filesystem
their data directories are one directory. The manifest model
(:data:`plughost_sdk.manifest.ID_PATTERN`) allows ASCII letters, digits, ``_``,
``.`` and ``-`` only, never a leading separator or ``..``, so an id is always
one path component below ``data_dir``.

What does not live here: reading plugin folders (:mod:`plughost.plugins.source`),
and acting on a refusal (the host, its reloader and its remote runners).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeAlias

from plughost.events import EventBus, EventKind, LifecycleEvent
from plughost_sdk.manifest import ID_PATTERN

__all__ = ["BINDINGS_FILE", "Binding", "IdBindings", "RemoteHolders", "id_key"]

log = logging.getLogger(__name__)

BINDINGS_FILE: Final = ".bindings.json"
"""Below ``data_dir``; a dot name no plugin id can have, out of every runner's reach."""
_MAX_BYTES: Final = 4 << 20
_FORMAT: Final = 1

RemoteHolders = Callable[[str], list[str]]
"""The names of the live credentials whose allow-list names a plugin id."""


class _Later:
    """An owner that now claims another id: decide once it has (or has not) got that one."""


_LATER: Final = _Later()
_Hold: TypeAlias = Callable[[Path], str] | _Later | None


def id_key(plugin_id: str) -> str:
    """The claim ``plugin_id`` makes: ids that differ only in case make the same one."""
    return plugin_id.casefold()


@dataclass(frozen=True, slots=True)
class Binding:
    """An id's owner: a local folder, or the remote runners of a credential."""

    plugin_id: str
    folder: Path | None = None
    remote: str = ""
    """The credential whose runner served it first, for an id remote runners serve."""


@dataclass(frozen=True, slots=True)
class _Notice:
    plugin_id: str
    folder: Path
    message: str


class IdBindings:
    """The host's record of which folder owns each id, and its rules for a new claim.

    :meth:`settle` decides at start (in the start-up scan's worker thread),
    :meth:`claim` decides for one folder while serving, :meth:`remote_refusal`
    and :meth:`bind_remote` for remote runners; the rest runs on the event loop.
    """

    def __init__(
        self, data_root: Path | None = None, remote_holders: RemoteHolders = lambda _: []
    ) -> None:
        """Bindings kept in ``<data_root>/.bindings.json``; in memory only without a root.

        Args:
            data_root: The host's ``data_dir``.
            remote_holders: Which credentials may serve an id (none without remote runners).
        """
        self._data_root = data_root
        self._file = data_root / BINDINGS_FILE if data_root is not None else None
        self._remote_holders = remote_holders
        self._bound: dict[str, Binding] = {}
        self._released: dict[str, Binding] = {}  # ids whose folder took another one
        self._claims: dict[Path, str] = {}  # every folder known to claim an id, and its key
        self._notices: list[_Notice] = []
        self._loaded = False
        self._changes = 0
        self._written = 0
        self._lock = threading.Lock()

    def owner(self, plugin_id: str) -> Binding | None:
        """The binding of ``plugin_id`` (or of an id differing only in case)."""
        return self._bound.get(id_key(plugin_id))

    def settle(self, claims: Iterable[tuple[str, Path]]) -> dict[Path, str]:
        """Decide every claim found at start; bind the winners and save.

        Args:
            claims: ``(plugin id, resolved folder)`` of every folder whose manifest is valid.

        Returns:
            Per refused folder, why: the folders involved and the fix.
        """
        self._load()
        groups: dict[str, dict[Path, str]] = {}
        for plugin_id, folder in claims:
            groups.setdefault(id_key(plugin_id), {})[folder] = plugin_id
        self._claims = {folder: key for key, group in groups.items() for folder in group}
        refused: dict[Path, str] = {}
        # An owner that now claims another id gives its old one up only once it got the new one.
        deferred = [key for key, group in groups.items() if not self._settle(group, refused)]
        for key in deferred:
            self._settle(groups[key], refused, final=True)
        self.save()
        return refused

    def _settle(
        self, group: dict[Path, str], refused: dict[Path, str], final: bool = False
    ) -> bool:
        """Decide one id's claimants; False to decide it again after the others."""
        plugin_id = next(iter(group.values()))
        bound = self._bound.get(id_key(plugin_id))
        owner = bound.folder if bound is not None else None
        if owner is not None and owner in group:
            self._bind(group[owner], owner, bound)
            refused.update({f: self._taken(owner, f, i) for f, i in group.items() if f != owner})
            return True
        held = self._held(bound, plugin_id, final)
        if isinstance(held, _Later):
            return False
        if held is not None:
            refused.update({folder: held(folder) for folder in group})
        elif len(group) == 1:
            ((folder, only_id),) = group.items()
            self._bind(only_id, folder, bound)
        else:
            refused.update(dict.fromkeys(group, _ambiguous(plugin_id, sorted(group))))
        return True

    def _held(self, bound: Binding | None, plugin_id: str, final: bool) -> _Hold:
        """How an owner that is not the claimant still holds the id (None: it does not)."""
        if bound is None:
            return None
        if bound.remote:
            holders = self._remote_holders(bound.plugin_id)
            return (lambda folder: _remote_reason(bound, holders, folder)) if holders else None
        owner = bound.folder
        if owner is None or not owner.is_dir():
            return None
        claimed = self._claims.get(owner)
        if not final and claimed is not None and claimed != id_key(plugin_id):
            return _LATER  # it may get its new id, and then it gives this one up
        return lambda folder: self._taken(owner, folder, plugin_id)

    def claim(self, plugin_id: str, folder: Path) -> str | None:
        """Decide one folder's claim while serving; bind it when it is granted.

        Args:
            plugin_id: The id its manifest names, from the one parse the reload uses.
            folder: Its resolved path.

        Returns:
            None when ``folder`` may serve ``plugin_id``; else why not, naming the
            folders involved and the fix.
        """
        self._load()
        key = id_key(plugin_id)
        self._claims[folder] = key
        bound = self._bound.get(key)
        if bound is not None and bound.folder == folder:
            self._bind(plugin_id, folder, bound)
            return None
        held = self._held(bound, plugin_id, final=True)
        if held is not None and not isinstance(held, _Later):
            return held(folder)
        others = sorted(f for f, k in self._claims.items() if k == key and f != folder)
        others = [f for f in others if f.is_dir()]
        if others:
            return _ambiguous(plugin_id, sorted([folder, *others]))
        self._bind(plugin_id, folder, bound)
        return None

    def forget_folder(self, folder: Path) -> Path | None:
        """A folder was removed: it claims nothing now (an id it owns stays bound to it).

        Returns:
            The one folder left claiming its id, which it was refused for, if any.
        """
        key = self._claims.pop(folder, None)
        if key is None or key in self._bound:
            return None
        left = [f for f, k in self._claims.items() if k == key and f.is_dir()]
        return left[0] if len(left) == 1 else None

    def remote_refusal(self, plugin_id: str) -> str | None:
        """Why remote runners may not serve ``plugin_id``: a local folder owns or claims it."""
        key = id_key(plugin_id)
        bound = self._bound.get(key)
        if bound is not None and bound.remote:
            return None
        if bound is not None and bound.folder is not None and bound.folder.is_dir():
            return (
                f"plugin {plugin_id} belongs to this host's own plugin folder {bound.folder}; "
                "give the remote copy another id, or remove that folder and restart the host"
            )
        local = sorted(f for f, k in self._claims.items() if k == key and f.is_dir())
        if local:
            return (
                f"plugin {plugin_id} is claimed by this host's own plugin folder "
                f"{', '.join(map(str, local))}; give the remote copy another id, or remove "
                "the local folder and restart the host"
            )
        return None

    def bind_remote(self, plugin_id: str, credential: str) -> bool:
        """Bind ``plugin_id`` to remote runners, unless it is bound already; True if it changed."""
        key = id_key(plugin_id)
        bound = self._bound.get(key)
        if (bound is not None and bound.remote) or self.remote_refusal(plugin_id) is not None:
            return False
        self._bound[key] = Binding(plugin_id, remote=credential)
        self._changes += 1
        return True

    def announce(self, events: EventBus) -> None:
        """Publish every id that passed to a new folder since the last call (on the loop)."""
        notices, self._notices = self._notices, []
        for notice in notices:
            events.emit(
                LifecycleEvent(
                    EventKind.PLUGIN_REBOUND,
                    notice.message,
                    plugin_id=notice.plugin_id,
                    details={"path": str(notice.folder)},
                )
            )

    def _bind(self, plugin_id: str, folder: Path, previous: Binding | None) -> None:
        """Make ``folder`` the owner of ``plugin_id``; it gives up any other id it owned."""
        key, binding = id_key(plugin_id), Binding(plugin_id, folder)
        for other in [k for k, b in self._bound.items() if b.folder == folder and k != key]:
            self._released[other] = self._bound.pop(other)
            self._changes += 1
        if self._bound.get(key) != binding:
            self._bound[key] = binding
            self._changes += 1
        previous = previous or self._released.pop(key, None)
        if previous is not None and previous.folder != folder:
            self._notices.append(_Notice(plugin_id, folder, self._rebound(previous, folder)))

    def _rebound(self, previous: Binding, folder: Path) -> str:
        data = self._data_dir(previous.plugin_id)
        if previous.remote:
            was = (
                f"no remote runner credential allows it any more (remote runners of "
                f"credential {previous.remote} served it)"
            )
        elif previous.folder is not None and previous.folder.is_dir():
            was = f"its folder {previous.folder} now claims another id"
        else:
            was = f"its folder {previous.folder} is gone (moved or renamed)"
        return (
            f"plugin {previous.plugin_id}: {was}; {folder}, the only folder claiming the id, "
            f"now owns it and its data{data}"
        )

    def _taken(self, owner: Path, folder: Path, plugin_id: str) -> str:
        claimed = self._claims.get(owner)
        state = (
            ""
            if claimed == id_key(plugin_id)
            else ", which is still there (its _manifest.json does not claim it now: see its "
            "own error)"
        )
        return (
            f"plugin id {plugin_id!r} belongs to {owner}{state}, bound to it when it first "
            f"loaded, with its data{self._data_dir(plugin_id)}; {folder} claims it too and is "
            f"not loaded: give {folder} another id in its _manifest.json, or, if it is to "
            f"replace the installed plugin, remove {owner} and restart the host"
        )

    def _data_dir(self, plugin_id: str) -> str:
        return f" ({self._data_root / plugin_id})" if self._data_root is not None else ""

    def _load(self) -> None:
        """Read the bindings file once; a broken one is set aside (ids are bound anew)."""
        if self._loaded:
            return
        self._loaded = True
        if self._file is None:
            return
        try:
            with self._file.open("rb") as handle:
                raw = handle.read(_MAX_BYTES + 1)
            self._bound = _parse(raw)
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            log.warning(
                "ignored %s (%s): every id is bound anew at this start, and an id several "
                "folders claim is refused to all of them until one is left",
                self._file,
                exc,
            )
            self._changes += 1  # write a sound one

    def save(self) -> None:
        """Write the bindings if they changed, on this thread (the start-up scan's, say)."""
        self._write(self._changes, self._dump())

    async def save_soon(self) -> None:
        """Write the bindings if they changed, from a worker thread (on the event loop)."""
        if self._changes != self._written:  # the snapshot is taken here, on the loop's thread
            await asyncio.to_thread(self._write, self._changes, self._dump())

    def _write(self, changes: int, text: bytes) -> None:
        """Write ``text`` atomically (a new file renamed over the old), unless newer is written."""
        with self._lock:
            if self._file is None or changes <= self._written:
                return
            try:
                _write_atomically(self._file, text)
            except OSError as exc:
                log.warning(
                    "cannot write %s: %s; the bindings hold until the host stops",
                    self._file,
                    exc,
                )
                return
            self._written = changes

    def _dump(self) -> bytes:
        ids: dict[str, dict[str, str]] = {}
        for key, binding in sorted(self._bound.items()):
            entry = {"id": binding.plugin_id}
            if binding.folder is not None:
                entry["folder"] = str(binding.folder)
            else:
                entry["remote"] = binding.remote
            ids[key] = entry
        return json.dumps({"format": _FORMAT, "ids": ids}, indent=2).encode() + b"\n"


def _parse(raw: bytes) -> dict[str, Binding]:
    if len(raw) > _MAX_BYTES:
        raise ValueError(f"larger than {_MAX_BYTES} bytes")
    data: Any = json.loads(raw)
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        raise ValueError(f"not a bindings file of format {_FORMAT}")
    bound: dict[str, Binding] = {}
    ids = data.get("ids")
    for entry in ids.values() if isinstance(ids, dict) else ():
        plugin_id = entry.get("id") if isinstance(entry, dict) else None
        folder, remote = (entry.get("folder"), entry.get("remote")) if plugin_id else (None, None)
        if not isinstance(plugin_id, str) or not ID_PATTERN.match(plugin_id):
            raise ValueError(f"an entry without a plugin id: {entry!r}")
        if isinstance(folder, str) and os.path.isabs(folder):
            bound[id_key(plugin_id)] = Binding(plugin_id, Path(folder))
        elif isinstance(remote, str) and remote:
            bound[id_key(plugin_id)] = Binding(plugin_id, remote=remote)
        else:
            raise ValueError(f"plugin {plugin_id}: neither a folder nor a remote credential")
    return bound


def _write_atomically(file: Path, text: bytes) -> None:
    file.parent.mkdir(parents=True, exist_ok=True)
    partial = file.with_name(f"{file.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with partial.open("wb") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, file)
    finally:
        partial.unlink(missing_ok=True)


def _ambiguous(plugin_id: str, folders: list[Path]) -> str:
    return (
        f"plugin id {plugin_id!r} is claimed by {len(folders)} folders and none owns it yet: "
        f"{', '.join(map(str, folders))}; none of them is loaded (the host does not pick one): "
        "give all but one of them another id in its _manifest.json, or remove them, then "
        "restart the host (or save the remaining one's _manifest.json again)"
    )


def _remote_reason(bound: Binding, holders: list[str], folder: Path) -> str:
    return (
        f"plugin id {bound.plugin_id!r} is served by remote runners (first by credential "
        f"{bound.remote}; allowed by {', '.join(holders)}); {folder} claims it too and is not "
        f"loaded: give {folder} another id in its _manifest.json, or take the id off those "
        "credentials (plughost runner-credentials revoke NAME, then issue it anew without it) "
        "and restart the host"
    )
