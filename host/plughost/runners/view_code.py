"""Code a plugin wrote into its folder view is set aside before its next runner starts.

A runner sees its plugin's folder through a copy-on-write view
(:func:`plughost.runners.sandbox.folder_views`): what the plugin writes there
lands in an upper layer the host keeps, and the runner imports its modules
through that view. Without this step a plugin could rewrite its own
``plugin.py`` (or add a ``helper.py``, a ``.pyc``, a ``.so``, or delete a
module) once, and from its next start on run that code instead of the folder
the operator reads, edits and updates: an upper file shadows the published one
for good.

So before a runner is started, every entry of the upper layer whose name is a
Python module's (``.py``, bytecode, extension modules: what
:func:`importlib.machinery.all_suffixes` lists; a deleted file's whiteout
included) is moved to ``set-aside/<time>/`` beside the layer, keeping its
relative path: out of the runner's reach, nothing deleted. Everything else
the plugin wrote (data, a config template) stays. Within one run a plugin can
still change its own code (it can run any code anyway); across a restart the
published code wins.

The walk opens each directory from its parent's descriptor without following
links (a replica of the same plugin may be rewriting the layer meanwhile, and
a link must never lead the host elsewhere), and stops past
:data:`MAX_ENTRIES` entries or :data:`MAX_DEPTH` levels with
:class:`ViewTooLarge`, which names the layer and the fix.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.machinery import all_suffixes
from pathlib import Path

from plughost.events import EventBus, EventKind, LifecycleEvent
from plughost.runners.sandbox import folder_view

__all__ = [
    "MAX_DEPTH",
    "MAX_ENTRIES",
    "SetAside",
    "ViewTooLarge",
    "set_aside_code",
    "set_aside_view_code",
]

MAX_ENTRIES = 100_000
MAX_DEPTH = 64
_CODE_SUFFIXES = tuple(all_suffixes())
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class ViewTooLarge(OSError):
    """The upper layer is past the walk's bounds: the runner is not started."""


@dataclass(frozen=True, slots=True)
class SetAside:
    """What was moved out of one upper layer, and where to."""

    moved: tuple[str, ...]  # paths relative to the plugin's folder
    to: Path


async def set_aside_view_code(
    plugin_ids: Iterable[str], data_root: Path, events: EventBus, runner_id: str
) -> None:
    """Before a runner starts: set aside the code in its plugins' folder views, saying so.

    An empty or missing layer (most plugins write nothing into their folder) is
    seen on the event loop; a layer with entries is walked in a thread, so that
    no plugin's many files stall the loop.

    Raises:
        ViewTooLarge: a layer past the walk's bounds (the runner must not start).
    """
    for plugin_id in plugin_ids:
        base = folder_view(data_root, plugin_id)
        upper = base / "upper"
        try:
            with os.scandir(upper) as listing:
                if next(listing, None) is None:
                    continue
        except FileNotFoundError:
            continue
        done = await asyncio.to_thread(set_aside_code, upper, base / "set-aside")
        if done is None:
            continue
        shown = ", ".join(done.moved[:5]) + (", ..." if len(done.moved) > 5 else "")
        message = (
            f"sandbox: plugin {plugin_id} had written code into its own folder ({shown}); "
            f"its published code runs, and what it wrote was moved to {done.to}"
        )
        events.emit(
            LifecycleEvent(
                EventKind.SANDBOX_DENIED,
                message,
                plugin_id=plugin_id,
                runner_id=runner_id,
                details={"set_aside": list(done.moved), "moved_to": str(done.to)},
            )
        )


def set_aside_code(upper: Path, aside: Path) -> SetAside | None:
    """Move every module file out of ``upper`` into a new folder under ``aside``.

    Returns None when there was none (or no upper layer yet).

    Raises:
        ViewTooLarge: more than :data:`MAX_ENTRIES` entries or :data:`MAX_DEPTH` levels
            (the module files met before that are set aside all the same).
    """
    try:
        top = os.open(upper, _DIRECTORY)
    except FileNotFoundError:
        return None
    target = aside / time.strftime("%Y%m%d-%H%M%S") / f"{time.time_ns() % 10**9:09d}"
    moved: list[str] = []
    pending: list[tuple[str, ...]] = [()]
    seen = 0
    try:
        while pending:
            parts = pending.pop()
            directory = _open_below(top, parts)
            if directory is None:
                continue  # replaced by a link or a file meanwhile: not followed
            try:
                with os.scandir(directory) as listing:
                    entries = list(listing)  # read whole before any entry moves
                for entry in entries:
                    seen += 1
                    if seen > MAX_ENTRIES:
                        raise ViewTooLarge(_too_large(upper, f"more than {MAX_ENTRIES:,} entries"))
                    if entry.name.endswith(_CODE_SUFFIXES):
                        destination = target.joinpath(*parts, entry.name)
                        destination.parent.mkdir(parents=True, exist_ok=True)
                        os.rename(entry.name, destination, src_dir_fd=directory)
                        moved.append("/".join((*parts, entry.name)))
                    elif entry.is_dir(follow_symlinks=False):
                        if len(parts) >= MAX_DEPTH:
                            raise ViewTooLarge(_too_large(upper, f"more than {MAX_DEPTH} levels"))
                        pending.append((*parts, entry.name))
            finally:
                os.close(directory)
    finally:
        os.close(top)
    return SetAside(tuple(moved), target) if moved else None


def _open_below(top: int, parts: tuple[str, ...]) -> int | None:
    """The directory ``parts`` below ``top``, opened one component at a time, no link followed."""
    directory = os.dup(top)
    for part in parts:
        try:
            child = os.open(part, _DIRECTORY, dir_fd=directory)
        except OSError:
            os.close(directory)
            return None
        os.close(directory)
        directory = child
    return directory


def _too_large(upper: Path, why: str) -> str:
    return (
        f"the plugin's folder view {upper} holds {why}; the host checks it for code the "
        "plugin wrote into its folder before each start: move what the plugin keeps there "
        "to its data directory, or remove the folder view to start it from its published "
        "folder alone"
    )
