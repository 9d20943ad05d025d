"""Keep secrets out of logs and events.

Text that comes from plugins (their log records, prints, crash output,
exception messages) reaches the host's logs and lifecycle events. Plugins
hold secrets: API keys in their ``config.toml``, and whatever the operator
passes them. The redactor learns the secret values (configuration values under
keys that name a secret, and the host's own secret-looking environment
variables) and replaces them wherever that text is logged or published.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["REDACTED", "SecretRedactor"]

REDACTED = "[redacted]"
SECRET_KEY = re.compile(r"(key|token|secret|passw|credential|auth|cookie|session)", re.IGNORECASE)
_MIN_LENGTH = 6  # shorter values are too likely to occur in ordinary text


class SecretRedactor:
    """Remembers secret values and masks them in text."""

    def __init__(self) -> None:
        self._secrets: set[str] = set()
        self._pattern: re.Pattern[str] | None = None

    def add(self, value: str) -> None:
        """Treat ``value`` as a secret from now on (short values are ignored)."""
        if isinstance(value, str) and len(value) >= _MIN_LENGTH and value not in self._secrets:
            self._secrets.add(value)
            ordered = sorted(self._secrets, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(s) for s in ordered))

    def add_config(self, config: Mapping[str, Any]) -> None:
        """Learn every string stored under a secret-looking key, at any depth."""
        for key, value in config.items():
            if isinstance(value, Mapping):
                self.add_config(value)
            elif isinstance(value, str) and SECRET_KEY.search(str(key)):
                self.add(value)
            elif isinstance(value, list) and SECRET_KEY.search(str(key)):
                for item in value:
                    if isinstance(item, str):
                        self.add(item)

    def add_environment(self, environ: Mapping[str, str]) -> None:
        """Learn the values of secret-looking environment variables."""
        for name, value in environ.items():
            if SECRET_KEY.search(name):
                self.add(value)

    def redact(self, text: str) -> str:
        """``text`` with every known secret replaced by ``[redacted]``."""
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(REDACTED, text)

    def redact_data(self, data: Any) -> Any:
        """Redact every string inside nested dicts and lists."""
        if isinstance(data, str):
            return self.redact(data)
        if isinstance(data, Mapping):
            return {k: self.redact_data(v) for k, v in data.items()}
        if isinstance(data, list | tuple):
            return [self.redact_data(v) for v in data]
        return data
