"""The runner protocol: envelope, method table, error shape and codec. No sockets here.

The readable spec is docs/protocol.md; this module is its single source of truth.
Every message is one ZeroMQ frame holding one msgpack map (the envelope),
followed by zero or more blob frames::

    {"v": 3, "kind": "request" | "response" | "event", "id": int, "method": str,
     "plugin": str | None, "deadline_ms": int | None, "body": any, "error": Error | None}

A response carries the id and method of its request. Events carry the id of the
request they belong to, or 0. Binary payloads (media) are msgpack ``bin``, never
base64 text; a large one (a :class:`Blob`, as result media of ``BLOB_MIN_BYTES``
or more are) travels as its own frame after the envelope, referenced from the
envelope by an ext value (type ``BLOB_EXT``, data: the frame's index as a 4-byte
big-endian int, 1 for the first frame after the envelope). Neither side copies
such a payload into or out of the envelope, so media cost one copy end to end.
The envelope is plain msgpack on purpose: frames are checked with a few
``isinstance`` tests, not a pydantic model, because this is the hot path.

A frame without blob frames may hold several envelopes back to back: a sender
coalesces what it sends in one event-loop iteration (:func:`decode_many`).

Changelog:
    1: first version.
    2: blob frames after the envelope, referenced by ext type 1; several envelopes
       back to back in one frame.
    3: ``component.invoke`` (commands, event handlers, hook handlers, APIs), the
       ``components`` list of a loaded plugin, the ``component_not_found`` code.
    4: the ``progress`` event of a tool call (tied to its ``tool.invoke`` id);
       ``call.cancel`` also when the host's caller is cancelled.
    5: credentials arrive over a descriptor, never the environment; ``runner.ready`` is
       sent once and names only the plugins of the hello reply (anything else recycles
       the runner, as does a second hello with the token); ``capability.call`` carries
       ``call``, the id of the request being served; frames decode within
       ``MAX_FRAME_ITEMS``.
    6: ``blocked`` in ``runner.heartbeat``, sent by the runner's pulse thread while an
       async handler blocks the event loop.
    7: ``resource.read`` and ``prompt.get``; ``plugins.load`` reports each plugin's
       ``resources`` and ``prompts``; ``log.batch`` records carry ``call``, the id
       of the host request being served.
    8: remote runners: ``runner.rejoin`` (host to a runner it has no session with:
       say hello again), ``plugin.offer`` and ``plugin.reloaded`` (a plugin edited on
       the runner's machine, offered and then reported like ``runner.ready``), and
       ``capabilities`` in each offer (cut down to the credential's grants).
    9: a remote runner leaving on SIGTERM: ``runner.draining`` (runner to host: send
       it no new call; its calls in flight will still be answered) and the event
       ``runner.drained`` (every call answered; the runner exits now).
    10: ``plugin.offer`` may name a plugin the session does not serve yet (a folder
        added on the runner's machine); ``plugin.removed`` (runner to host: a folder
        removed there; the host takes the plugin out of its pool first).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, TypedDict, cast, get_args

import msgpack

from plughost_sdk.errors import ProtocolError
from plughost_sdk.models import ContentItem, ToolExecutionResult

__all__ = [
    "BLOB_EXT",
    "BLOB_MIN_BYTES",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "ERROR_CODES",
    "MAX_BATCH",
    "MAX_BLOBS",
    "MAX_FRAME_ITEMS",
    "PROTOCOL_VERSION",
    "Blob",
    "Envelope",
    "ErrorCode",
    "Kind",
    "Method",
    "WireError",
    "decode",
    "decode_many",
    "encode",
    "encode_parts",
    "error_body",
    "event",
    "fields_to_wire",
    "request",
    "response",
    "result_from_wire",
    "result_to_wire",
]

PROTOCOL_VERSION: Final = 15
DEFAULT_MAX_MESSAGE_BYTES: Final = 32 * 1024 * 1024
BLOB_EXT: Final = 1
"""The msgpack ext type that stands for a blob frame in an envelope."""
BLOB_MIN_BYTES: Final = 64 * 1024
"""Result media this large or larger travel as blob frames; smaller ones stay ``bin``."""
MAX_BLOBS: Final = 64
"""Blob frames one message may carry; a message with more is dropped whole."""
MAX_BATCH: Final = 256
"""Envelopes one coalesced frame may carry (see :func:`decode_many`)."""
MAX_FRAME_ITEMS: Final = 1_000_000
"""Array elements and map entries one frame may decode to (see :func:`decode`)."""
_UNBOUNDED_FRAME: Final = 64 * 1024
"""Frames up to this size decode without counting: they cannot hold enough items to matter."""

Kind = Literal["request", "response", "event"]

Method = Literal[
    # host -> runner
    "plugins.load",
    "tool.invoke",
    "component.invoke",
    "resource.read",
    "prompt.get",
    "config.update",
    "runner.health",
    "runner.shutdown",
    "call.cancel",
    "runner.rejoin",
    # runner -> host
    "runner.hello",
    "runner.ready",
    "runner.heartbeat",
    "capability.call",
    "log.batch",
    "progress",
    "plugin.offer",
    "plugin.reloaded",
    "runner.draining",
    "runner.drained",
    "plugin.removed",
]

ErrorCode = Literal[
    "timeout",
    "plugin_crashed",
    "plugin_not_found",
    "tool_not_found",
    "component_not_found",
    "bad_payload",
    "protocol_mismatch",
    "unauthorized",
    "shutting_down",
    "overloaded",
    "capability_denied",
    "capability_not_provided",
    "capability_failed",
    "message_too_large",
    "cancelled",
    "internal",
]

METHODS: Final = frozenset(get_args(Method))
ERROR_CODES: Final = frozenset(get_args(ErrorCode))
_KINDS: Final = frozenset(get_args(Kind))


class WireError(TypedDict):
    """The one error shape of the protocol."""

    code: str
    message: str
    details: dict[str, Any]


class Envelope(TypedDict):
    """A decoded message."""

    v: int
    kind: Kind
    id: int
    method: str
    plugin: str | None
    deadline_ms: int | None
    body: Any
    error: WireError | None


def request(
    request_id: int,
    method: Method,
    body: Any = None,
    *,
    plugin: str | None = None,
    deadline_ms: int | None = None,
) -> Envelope:
    """Build a request envelope; ``deadline_ms`` is the remaining budget in milliseconds."""
    return {
        "v": PROTOCOL_VERSION,
        "kind": "request",
        "id": request_id,
        "method": method,
        "plugin": plugin,
        "deadline_ms": deadline_ms,
        "body": body,
        "error": None,
    }


def response(to: Envelope, body: Any = None, error: WireError | None = None) -> Envelope:
    """Build the response to request ``to``: same id, same method, same plugin."""
    return {
        "v": PROTOCOL_VERSION,
        "kind": "response",
        "id": to["id"],
        "method": to["method"],
        "plugin": to["plugin"],
        "deadline_ms": None,
        "body": body,
        "error": error,
    }


def event(
    method: Method, body: Any = None, *, request_id: int = 0, plugin: str | None = None
) -> Envelope:
    """Build an event; ``request_id`` ties it to a request (0 for none)."""
    return {
        "v": PROTOCOL_VERSION,
        "kind": "event",
        "id": request_id,
        "method": method,
        "plugin": plugin,
        "deadline_ms": None,
        "body": body,
        "error": None,
    }


def error_body(code: ErrorCode, message: str, **details: Any) -> WireError:
    """Build the error shape; ``message`` should say what happened and what to do."""
    return {"code": code, "message": message, "details": details}


class Blob:
    """Bytes that travel as their own frame after the envelope, not inside it.

    Wrap a large binary payload in a Blob before encoding; the other side decodes
    it back to plain ``bytes``. :func:`result_to_wire` does this for result media
    of ``BLOB_MIN_BYTES`` or more.
    """

    __slots__ = ("data",)

    def __init__(self, data: bytes | memoryview) -> None:
        self.data = data


class _Packers(threading.local):
    """One thread's msgpack packers, kept between messages.

    ``msgpack.packb`` builds a packer, and with it a 256 KiB buffer, for every
    message; reusing one halves the cost of encoding a small envelope. A packer
    is not thread-safe (the runner's pulse thread and a sync handler's progress
    reports encode too), hence one set per thread. A packer that fails clears its
    buffer, so it stays usable.
    """

    def __init__(self) -> None:
        self.plain = msgpack.Packer(use_bin_type=True)
        self.blobs: list[bytes | memoryview] = []
        self.with_blobs = msgpack.Packer(use_bin_type=True, default=self._as_ext)

    def _as_ext(self, value: Any) -> msgpack.ExtType:
        if type(value) is not Blob:
            raise TypeError(f"can not serialize {type(value).__name__!r} object")
        if len(self.blobs) >= MAX_BLOBS:
            raise ValueError(f"more than {MAX_BLOBS} blobs in one message")
        self.blobs.append(value.data)
        return msgpack.ExtType(BLOB_EXT, len(self.blobs).to_bytes(4, "big"))


_packers = _Packers()


def encode(envelope: Envelope) -> bytes:
    """Encode an envelope that holds no :class:`Blob` to one frame.

    Raises:
        ProtocolError: the body holds something msgpack cannot encode, or a Blob
            (use :func:`encode_parts`).
    """
    try:
        frame: bytes = _packers.plain.pack(envelope)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ProtocolError(f"cannot encode {envelope.get('method')!r} message: {exc}") from exc
    return frame


def encode_parts(envelope: Envelope) -> list[bytes | memoryview]:
    """Encode an envelope to its frames: the envelope, then one frame per :class:`Blob`.

    Raises:
        ProtocolError: the body holds something msgpack cannot encode, or more
            than ``MAX_BLOBS`` blobs.
    """
    packers = _packers
    try:
        return [packers.plain.pack(envelope)]  # most messages: no blob in them
    except (TypeError, ValueError, OverflowError):
        pass  # a Blob, or something msgpack cannot encode: the packer that knows blobs says
    packers.blobs = []
    try:
        frame: bytes = packers.with_blobs.pack(envelope)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ProtocolError(f"cannot encode {envelope.get('method')!r} message: {exc}") from exc
    finally:
        blobs, packers.blobs = packers.blobs, []
    return [frame, *blobs]


def decode(frame: bytes | memoryview, blobs: Sequence[bytes | memoryview] = ()) -> Envelope:
    """Decode and check a frame holding exactly one envelope; ``blobs`` followed it.

    Each blob referenced from the envelope becomes ``bytes`` (its one copy); a blob
    frame nothing references is ignored. A frame decodes to at most
    ``MAX_FRAME_ITEMS`` array elements and map entries (see :func:`_budget`).

    Raises:
        ProtocolError: the frame is not msgpack, not an envelope, or of another
            version, it references a blob frame that is not there, or it holds
            too many items.
    """
    options = _budget(len(frame))
    try:
        data = msgpack.unpackb(
            frame,
            raw=False,
            strict_map_key=False,
            ext_hook=_blob_hook(blobs) if blobs else _no_blobs,
            **options,
        )
    except Exception as exc:  # msgpack raises several unrelated types on garbage
        raise _invalid(exc) from exc
    return _checked(data)


def decode_many(
    frame: bytes | memoryview, blobs: Sequence[bytes | memoryview] = ()
) -> list[Envelope]:
    """Decode a frame holding one envelope, or up to ``MAX_BATCH`` back to back.

    A sender coalesces the envelopes it sends in one event-loop iteration into one
    frame (see :class:`~plughost_sdk.socket_pump.SocketPump`); each is a complete
    msgpack map, so the frame is their concatenation. A bad envelope anywhere
    makes the whole frame invalid.

    Raises:
        ProtocolError: as :func:`decode`, or more than ``MAX_BATCH`` envelopes.
    """
    hook = _blob_hook(blobs) if blobs else _no_blobs
    options = _budget(len(frame))
    try:
        data = msgpack.unpackb(frame, raw=False, strict_map_key=False, ext_hook=hook, **options)
        return [_checked(data)]
    except msgpack.ExtraData as batch:  # several envelopes back to back: the first is read
        first, rest = batch.unpacked, batch.extra
    except Exception as exc:  # msgpack raises several unrelated types on garbage
        raise _invalid(exc) from exc
    # The rest decodes under the same budget (``options`` keeps counting for the frame).
    unpacker = msgpack.Unpacker(
        raw=False,
        strict_map_key=False,
        ext_hook=hook,
        max_buffer_size=max(len(rest), 1),
        **options,
    )
    try:
        unpacker.feed(rest)
        items = [first, *(data for data, _ in zip(unpacker, range(MAX_BATCH), strict=False))]
    except Exception as exc:
        raise _invalid(exc) from exc
    if len(items) > MAX_BATCH:
        raise ProtocolError(f"more than {MAX_BATCH} envelopes in one frame")
    if unpacker.tell() != len(rest):
        raise ProtocolError("frame ends in the middle of an envelope")
    return [_checked(data) for data in items]


class _TooManyItems(Exception):
    pass


def _budget(size: int, max_items: int = MAX_FRAME_ITEMS) -> dict[str, Any]:
    """Decoder options that bound what a frame of ``size`` bytes may decode to.

    One byte of msgpack can become a 56-byte Python list, so a 24 MB frame of
    empty arrays would cost a decoder gigabytes and seconds. For a frame over
    ``_UNBOUNDED_FRAME`` bytes every container adds its length to a count as it
    is built, and decoding stops once the count passes ``max_items`` (no single
    container may exceed it either). Smaller frames cannot hold enough to matter
    and decode at full speed.
    """
    if size <= _UNBOUNDED_FRAME:
        return {}
    count = 0

    def counted(container: Any) -> Any:  # a list or a dict, just built
        nonlocal count
        count += len(container) + 1
        if count > max_items:
            raise _TooManyItems(max_items)
        return container

    return {
        "list_hook": counted,
        "object_hook": counted,
        "max_array_len": max_items,
        "max_map_len": max_items,
    }


def _invalid(exc: Exception) -> ProtocolError:
    """The protocol error for a decoder's exception (several unrelated types)."""
    if isinstance(exc, _TooManyItems) or "exceeds max_" in str(exc):
        return ProtocolError(
            f"frame holds more than {MAX_FRAME_ITEMS} items (array elements and map entries); "
            "return less data"
        )
    return ProtocolError(f"frame is not valid msgpack ({type(exc).__name__}: {exc})")


def _blob_hook(blobs: Sequence[bytes | memoryview]) -> Callable[[int, bytes], Any]:
    def blob(code: int, data: bytes) -> Any:
        index = int.from_bytes(data, "big") if code == BLOB_EXT and len(data) == 4 else 0
        if not 1 <= index <= len(blobs):
            raise ValueError(f"ext type {code} does not name one of {len(blobs)} blob frames")
        return bytes(blobs[index - 1])

    return blob


def _no_blobs(code: int, data: bytes) -> Any:
    """The ext hook of a frame that came without blob frames: any ext is an error."""
    raise ValueError(f"ext type {code} does not name one of 0 blob frames")


def _checked(data: Any) -> Envelope:
    if not isinstance(data, dict):
        raise ProtocolError("frame is not an envelope (expected a map)")
    version = data.get("v")
    if type(version) is not int or version != PROTOCOL_VERSION:  # True == 1 must not pass
        raise ProtocolError(
            f"protocol version {version!r} is not supported (this side speaks {PROTOCOL_VERSION}); "
            "install matching plughost and plughost-runner versions"
        )
    kind, request_id = data.get("kind"), data.get("id")
    if (
        not isinstance(kind, str)
        or kind not in _KINDS
        or type(request_id) is not int
        or not isinstance(data.get("method"), str)
    ):
        raise ProtocolError("frame is not an envelope (bad kind, id or method)")
    data.setdefault("plugin", None)
    data.setdefault("deadline_ms", None)
    data.setdefault("body", None)
    data.setdefault("error", None)
    return data  # type: ignore[return-value]


def result_to_wire(result: ToolExecutionResult) -> dict[str, Any]:
    """Turn a result into a msgpack-ready dict; media stay raw bytes."""
    return fields_to_wire(result.__dict__)


def fields_to_wire(fields: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`result_to_wire` of the result these fields would make, without the model.

    ``fields`` are :func:`plughost_sdk.results.normalized_fields`; a field left out
    is sent as the model's default.
    """
    get = fields.get
    return {
        "tool_name": get("tool_name", ""),
        "success": get("success", True),
        "content": get("content", ""),
        "error_message": get("error_message", ""),
        "error_code": get("error_code"),
        "structured_content": get("structured_content"),
        "content_items": [_item_to_wire(item) for item in get("content_items", ())],
        "post_history_messages": get("post_history_messages", []),
        "metadata": get("metadata", {}),
    }


def _item_to_wire(item: ContentItem) -> dict[str, Any]:
    data = item.model_dump(exclude_defaults=True)
    media = data.get("data")
    if isinstance(media, bytes) and len(media) >= BLOB_MIN_BYTES:
        data["data"] = Blob(media)
    return data


_validate_result = cast(
    "Callable[[Any], ToolExecutionResult]",
    ToolExecutionResult.__pydantic_validator__.validate_python,
)
"""``ToolExecutionResult.model_validate`` without its Python wrapper: every call's result."""


def result_from_wire(data: Any) -> ToolExecutionResult:
    """Rebuild a result sent by a runner.

    Raises:
        ProtocolError: the data is not a result.
    """
    if not isinstance(data, dict):
        raise ProtocolError("tool result is not a map")
    try:
        raw_items = data.get("content_items")
        if type(raw_items) is list and not raw_items:  # most results: no copy of the map
            return _validate_result(data)
        items = [ContentItem.model_validate(item) for item in raw_items or ()]
        return ToolExecutionResult.model_validate({**data, "content_items": items})
    except ValueError as exc:
        raise ProtocolError(f"tool result does not match the result schema: {exc}") from exc
