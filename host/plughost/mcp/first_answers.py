"""First answers: ``initialize`` and ``tools/list`` answered over stdio before serve has loaded.

An MCP client that starts ``plughost serve --mcp-stdio`` writes ``initialize``
at once and waits, then lists the tools; serve needs about a second of imports
(the MCP SDK, pydantic's models) before its session can answer either. Clients
that open a session per call pay that second on every call. So, before those
imports, :func:`start` runs a reader of stdin in a thread of its own that
answers the session's first two requests from the memo of the last run's own
answers (:data:`MEMO_FILE`, beside the tool catalogue):

- ``initialize``, when the client asks for a protocol version the last run
  answered (the answer is the session's own: server info, capabilities,
  instructions, that version), and its params have the plain shape the
  session accepts (:func:`_hello_version`): a handshake the session would
  refuse must get the session's error, not an answer it cannot take back;
- then the first ``tools/list`` without a cursor, with the last run's list for
  that version.

Every line the client wrote, these two included, is kept, in order, and
:func:`take` hands them to the session when serving starts
(:mod:`plughost.mcp.stdio_server`): the session reads them as if they had just
arrived and answers each, and the writer drops its answers to the two already
given (:class:`Given`). Where the session's ``tools/list`` answer differs from
the one given (a plugin was edited since the last run, an upstream lists other
tools), the client is sent ``notifications/tools/list_changed`` instead, and
lists again. The memo is written from the session's own answers
(:func:`Given.record`), so each run's first answers are the last run's.

A memo is believed only if it is this user's own 0600 file, written for the
same configuration file's bytes, plugin folders, working directory,
interpreter, plughost version and installed MCP SDK (:func:`memo_key`);
anything else, or a client that asks for anything else first, leaves every
request to the session. The
tool list is given only when the tool catalogue would give it too
(:mod:`plughost.mcp.warm_start`): no file in the plugin folders changed since
the serve that kept the list started (their names, sizes and change times:
:func:`folders_state`, taken before serve loads the plugins),
and the catalogue still vouches for every configured MCP server (one whose list
changed while serving makes the next start cold).

Imports nothing beyond the standard library: it runs before the SDK is imported.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import select
import stat
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plughost.mcp.own_file import read_own, write_own

__all__ = ["MEMO_FILE", "Given", "folders_state", "is_pipe", "memo_key", "start", "take"]

log = logging.getLogger(__name__)

MEMO_FILE = "mcp-first-answers.json"
"""Beside the tool catalogue, in the parent of ``[host] data_dir``."""
CATALOGUE_FILE = "tool-catalogue.json"
"""The tool catalogue's file (:mod:`plughost.cli.serve_catalogue`), which a test keeps in step."""
_FORMAT = 1
_SDK_DISTRIBUTIONS = ("mcp-", "mcp_types-")  # the SDK and its protocol types
_DIST = ".dist-info"
_INITIALIZE = "initialize"
_LIST = "tools/list"
_FOLDERS = "folders"
_CHUNK = 65536
_MAX_ENTRIES = 20000
"""Files and folders of the plugin folders looked at, at most: past it, no list is given early."""
_HELLO_KEYS = frozenset({"protocolVersion", "capabilities", "clientInfo"})
_CLIENT_KEYS = frozenset({"name", "version", "title", "description", "websiteUrl"})
_MAX_DEPTH = 32
"""Arrays and objects within one another on a line answered early, at most."""
_MAX_BRACKETS = 256
"""Brackets on a line parsed here, at most: so deep a line can never exhaust the parser."""
_MAX_LINE = 1 << 20
"""A first line longer than this is left to the session (an ``initialize`` is small)."""


@dataclass(slots=True)
class Given:
    """What was answered before serving began, and the memo the session's answers renew.

    Attributes:
        answers: The id of each request answered early, with the method and the
            ``result`` given.
        watched: Ids of the ``initialize`` and first ``tools/list`` requests the
            session answers, whose answers go into the memo.
    """

    path: Path | None = None
    key: str = ""
    state: str | None = None
    """The plugin folders' :func:`folders_state` as serve started, before it loaded
    them: what a tool list the session gives can be vouched by (a file changed
    since then may or may not be in it)."""
    memo: dict[str, Any] = field(default_factory=dict)
    answers: dict[Any, tuple[str, Any]] = field(default_factory=dict)
    watched: dict[Any, str] = field(default_factory=dict)
    version: str | None = None
    """The protocol version the session settled on with this client."""

    def record(self, method: str, result: Any) -> None:
        """Keep the session's answer to ``method`` for the next run's first answers."""
        if method == _INITIALIZE and isinstance(result, dict):
            version = result.get("protocolVersion")
            self.version = version if isinstance(version, str) else None
        if self.path is None or self.version is None:
            return
        kept = self.memo.setdefault(method, {})
        if method == _LIST and self.memo.get(_FOLDERS) != self.state:
            kept.clear()  # the lists of other versions were kept from other files
            self.memo[_FOLDERS] = self.state
        elif kept.get(self.version) == result:
            return
        kept[self.version] = result
        with contextlib.suppress(OSError):
            write_own(self.path, {"format": _FORMAT, "key": self.key, **self.memo})


@dataclass(slots=True)
class _Responder:
    given: Given
    buffered: bytearray = field(default_factory=bytearray)
    scanned: int = 0
    stop_read: int = -1
    stop_write: int = -1
    thread: threading.Thread | None = None
    asked: str | None = None  # the version the client asked for, once initialize is answered
    done: bool = False  # nothing more is answered here
    lists_hold: bool = False  # the kept tool lists are still what the catalogue vouches for
    out: int = 1  # where the answers go: the client's end of stdout

    def run(self) -> None:
        try:
            while True:
                ready, _, _ = select.select([0, self.stop_read], [], [])
                if self.stop_read in ready:
                    return
                chunk = os.read(0, _CHUNK)
                if not chunk:
                    return  # the client closed stdin: the session sees that too
                self.buffered += chunk
                if not self.done:
                    self._scan()
        except OSError:
            return

    def _scan(self) -> None:
        while not self.done:
            end = self.buffered.find(b"\n", self.scanned)
            if end < 0:
                if len(self.buffered) - self.scanned > _MAX_LINE:
                    self.done = True
                return
            line = bytes(self.buffered[self.scanned : end])
            self.scanned = end + 1
            if line.strip():
                self._consider(line)

    def _consider(self, line: bytes) -> None:
        message = _message(line)
        if message is None:
            self.done = True
            return
        method, request_id = message.get("method"), message.get("id")
        if "id" not in message:  # a notification (initialized): nothing to answer
            return
        if (
            type(request_id) not in (str, int)
            or message.get("jsonrpc") != "2.0"
            or request_id in self.given.answers  # a reused id: the session sorts it out
        ):
            self.done = True
            return
        params = message.get("params")
        if method == _INITIALIZE and self.asked is None:
            version = _hello_version(params)
            answers = self.given.memo.get(_INITIALIZE)
            result = answers.get(version) if version and isinstance(answers, dict) else None
            if not isinstance(result, dict):
                self.done = True
                return
            self._answer(request_id, _INITIALIZE, result)
            self.asked = version
        elif method == _LIST and self.asked is not None and params in (None, {}):
            lists = self.given.memo.get(_LIST) if self.lists_hold else None
            result = lists.get(self.asked) if isinstance(lists, dict) else None
            if isinstance(result, dict):
                self._answer(request_id, _LIST, result)
            self.done = True
        else:
            self.done = True

    def _answer(self, request_id: Any, method: str, result: dict[str, Any]) -> None:
        line = json.dumps(
            {"jsonrpc": "2.0", "id": request_id, "result": result},
            ensure_ascii=False,
            separators=(",", ":"),
        )
        data = memoryview(line.encode() + b"\n")
        while data:
            try:
                data = data[os.write(self.out, data) :]
            except BlockingIOError:  # stdout shared with a program that made it non-blocking
                select.select([], [self.out], [])
        self.given.answers[request_id] = (method, result)


_responder: _Responder | None = None


def _message(line: bytes) -> dict[str, Any] | None:
    """The JSON object on ``line`` as the session would read it; None if it might not.

    Strict UTF-8: ``json.loads`` would skip a byte-order mark on bytes (or read
    UTF-16), and take a lone surrogate's escape or any depth of nesting, which the
    session's parser refuses.
    """
    if line.count(b"[") + line.count(b"{") > _MAX_BRACKETS:
        # Possibly deeper than it may be: never parsed here. A RecursionError inside
        # CPython 3.11's parser leaves the interpreter's compiler unable to compile
        # ("AST constructor recursion depth mismatch"), and serve imports after this.
        return None
    try:
        message = json.loads(line.decode("utf-8"))
        json.dumps(message, ensure_ascii=False).encode("utf-8")  # no lone surrogate
    except ValueError:
        return None
    return message if isinstance(message, dict) and _shallow(message, _MAX_DEPTH) else None


def _shallow(value: Any, room: int) -> bool:
    """Whether ``value`` nests no deeper than ``room`` (the session's parser stops at 200)."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return room > 0 and all(_shallow(item, room - 1) for item in value)
    return True


def _plain_capabilities(capabilities: dict[str, Any]) -> bool:
    """Whether the client's capabilities have the shape the SDK's models take.

    Each is an object of objects all the way down, but for ``listChanged`` (a
    boolean) and what ``experimental`` and ``extensions`` hold under a name.
    """
    for name, capability in capabilities.items():
        if not isinstance(capability, dict):
            return False
        if name in ("experimental", "extensions"):
            if not all(isinstance(value, dict) for value in capability.values()):
                return False
        elif not _objects(capability):
            return False
    return True


def _objects(value: dict[str, Any]) -> bool:
    for key, item in value.items():
        plain = isinstance(item, bool) if key == "listChanged" else isinstance(item, dict)
        if not plain or (isinstance(item, dict) and not _objects(item)):
            return False
    return True


def _hello_version(params: Any) -> str | None:
    """The protocol version an ``initialize`` asks for, if the session would accept its params.

    The session checks the params against the SDK's models (a version, the client's
    capabilities, its name and version), and refuses the handshake otherwise; an
    answer given here would hide that refusal, so only the plain shape every
    client sends is answered early, and anything unusual is left to the session.
    """
    if not isinstance(params, dict) or not set(params) <= _HELLO_KEYS:
        return None
    version, capabilities, client = (
        params.get("protocolVersion"),
        params.get("capabilities"),
        params.get("clientInfo"),
    )
    if not (isinstance(version, str) and isinstance(capabilities, dict)):
        return None
    if not _plain_capabilities(capabilities):
        return None
    if not (isinstance(client, dict) and set(client) <= _CLIENT_KEYS):
        return None
    if not all(isinstance(client.get(key), str) for key in ("name", "version")):
        return None
    return version if all(isinstance(value, str) for value in client.values()) else None


def memo_key(config: bytes | None, plugin_dirs: list[str], version: str) -> str:
    """The digest of what a run's first answers follow from, short of the files it reads.

    A change there leaves every request to the session; a change in the plugins'
    files is caught when the session answers ``tools/list`` itself.
    """
    inputs = [
        _FORMAT,
        hashlib.sha256(config).hexdigest() if config is not None else None,
        [str(Path(folder).resolve()) for folder in plugin_dirs],
        os.getcwd(),
        sys.executable,
        version,
        _sdk_builds(),
    ]
    return hashlib.sha256(json.dumps(inputs).encode()).hexdigest()


def _sdk_builds() -> list[str]:
    """The installed MCP SDK's distributions, by their ``dist-info`` folders (name-version).

    The session's answers are the SDK's as much as plughost's: an SDK upgraded
    under the same plughost may answer ``initialize`` otherwise. Read without
    importing it (the point of answering first), from the first ``sys.path``
    folder that holds the ``mcp`` package, as the import would find it.
    """
    for entry in sys.path:
        folder = entry or "."
        if os.path.isfile(os.path.join(folder, "mcp", "__init__.py")):
            try:
                names = os.listdir(folder)
            except OSError:
                return []
            return sorted(
                n for n in names if n.startswith(_SDK_DISTRIBUTIONS) and n.endswith(_DIST)
            )
    return []


def folders_state(folders: list[str]) -> str | None:
    """The digest of every file's path, size and change time under ``folders``.

    A file written (an edit, a copy, a rename) changes its change time, which no
    program sets back. ``__pycache__`` folders are left out: Python writes them.
    A plugin folder may be a link (serve loads what it points at, and so it is
    read through); a link anywhere else is a plugin the tool catalogue never
    vouches for, and gives None, as do more than :data:`_MAX_ENTRIES` files and
    folders (an empty folder costs the walk as much) and a folder that cannot be
    read.
    """
    entries: list[tuple[str, int, int, int]] = []
    try:
        for folder in folders:
            linked: list[str] = []
            if not _walk(folder, entries, linked):
                return None
            if not all(_walk(plugin, entries, None) for plugin in linked):
                return None
    except OSError:
        return None
    return hashlib.sha256(json.dumps(entries).encode()).hexdigest()


def _walk(top: str, entries: list[tuple[str, int, int, int]], linked: list[str] | None) -> bool:
    """Add each file under ``top`` to ``entries``; False at a link not to be read through.

    ``linked`` takes the links to folders right in ``top`` (plugin folders); None
    refuses them too.
    """
    for root, dirs, files in os.walk(top):
        entries.append((root, -1, 0, 0))  # a folder counts toward the bound, as a file does
        if len(entries) > _MAX_ENTRIES:
            return False
        for name in sorted(dirs):
            path = os.path.join(root, name)
            if os.path.islink(path):
                if linked is None or root != top:
                    return False
                linked.append(path)
                dirs.remove(name)
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            info = os.lstat(os.path.join(root, name))
            if stat.S_ISLNK(info.st_mode):
                return False
            entries.append((os.path.join(root, name), info.st_size, info.st_ctime_ns, info.st_ino))
            if len(entries) > _MAX_ENTRIES:
                return False
    return True


def start(path: Path, key: str, folders: list[str], servers: list[str]) -> None:
    """Answer the first requests on stdin from the memo at ``path``, in a thread, if it holds.

    Args:
        path: The memo (:data:`MEMO_FILE`).
        key: :func:`memo_key` of this run.
        folders: The plugin folders serve loads from.
        servers: The names of the configured MCP servers.

    Only when stdin and stdout are pipes (as an MCP client makes them). Never raises.
    """
    global _responder
    if not (is_pipe(0) and is_pipe(1)):
        return
    given = Given(path=path, key=key, state=folders_state(folders))
    _responder = _Responder(given)
    try:
        saved = json.loads(read_own(path))
    except (OSError, ValueError):
        return  # no memo yet: the session answers, and its answers make one
    if not (isinstance(saved, dict) and saved.get("format") == _FORMAT and saved.get("key") == key):
        return
    given.memo = {m: saved[m] for m in (_INITIALIZE, _LIST) if isinstance(saved.get(m), dict)}
    given.memo[_FOLDERS] = saved.get(_FOLDERS)
    responder = _responder
    responder.lists_hold = (
        given.state is not None
        and saved.get(_FOLDERS) == given.state
        and _vouched(path.with_name(CATALOGUE_FILE), servers)
    )
    try:
        responder.stop_read, responder.stop_write = os.pipe()
        responder.thread = threading.Thread(
            target=responder.run, name="plughost-first-answers", daemon=True
        )
        responder.thread.start()
    except (OSError, RuntimeError):
        responder.thread = None


def take() -> tuple[bytes, Given]:
    """Stop answering; what the client wrote meanwhile, and what was answered and kept.

    Called once, by the stdio server, before it reads stdin itself.
    """
    global _responder
    responder, _responder = _responder, None
    if responder is None:
        return b"", Given()
    if responder.thread is not None:
        with contextlib.suppress(OSError):
            os.write(responder.stop_write, b"x")
        responder.thread.join()
    for fd in (responder.stop_read, responder.stop_write):
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
    if responder.given.answers:
        methods = sorted(method for method, _ in responder.given.answers.values())
        log.info("mcp first answers given before serving answered=%s", ",".join(methods))
    return bytes(responder.buffered), responder.given


def _vouched(catalogue: Path, servers: list[str]) -> bool:
    """Whether the tool catalogue still vouches for every configured MCP server's list."""
    try:
        saved = json.loads(read_own(catalogue)).get("fingerprints")
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(saved, dict) and all(f"mcp:{name}" in saved for name in servers)


def is_pipe(fd: int) -> bool:
    """Whether ``fd`` is a pipe or a socket (as an MCP client makes stdin and stdout)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
