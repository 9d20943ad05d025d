"""How a request handler of the runner answers with a wire error instead of a body.

Every handler of :class:`~plughost_runner.service.RunnerService` (its calls in
``service``, resources, prompts and configuration in ``plugin_requests``) raises
:class:`Reply`; the service's one request loop turns it into the response. It
lives apart so that the modules of the service share it without importing each
other.
"""

from __future__ import annotations

from plughost_sdk import wire

__all__ = ["Reply"]


class Reply(Exception):
    """Raised by a request handler to answer with a wire error."""

    def __init__(self, code: wire.ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = wire.error_body(code, message)
