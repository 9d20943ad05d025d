"""Keep secrets out of logs and events, each secret only where it belongs.

Text that comes from plugins (their log records and prints, their runner's
crash output, the reasons and tracebacks they report, their exception
messages) reaches the host's logs and lifecycle events, next to the host's own
sentences about them. Two kinds of secret are masked there:

- **The host's own**: secret-looking environment variables, the console token,
  the MCP bearer token (:meth:`SecretRedactor.add`). Masked in everything the
  host logs or publishes.
- **A plugin's**: strings under secret-looking keys of its ``config.toml``
  (:meth:`SecretRedactor.learn_config`, screened and bounded by
  :mod:`plughost.secret_values`). Masked only in text that comes from that
  plugin, which the caller names (``redact(text, plugins)``); never in what the
  host wrote (event kinds, plugin ids, paths, its own sentences) and never in a
  neighbour's text. A plugin's configuration may hide the plugin's own values,
  never the host's words: a value that is one of them is not learned, and one
  that becomes one later (a tool registered after the config was read) stops
  being masked.

Cost, whatever a configuration holds: learning a value is a dict insertion.
The matcher for a set of plugins (the host's secrets included) is an
Aho-Corasick automaton, built at the first redaction after a change and kept
for the next ones; masking is linear in the text. Python's ``re`` over an
alternation of secrets costs time per character proportional to their number
(8 ms for a 4,000-character line with 700 secrets), and RE2's Python ``sub``
microseconds per match (3 ms for a line of one short secret repeated), either
of which a plugin's output could turn into a stalled loop; the automaton takes
about 0.1 ms for both.
"""

from __future__ import annotations

import collections
import functools
import logging
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Final, Protocol

import ahocorasick

from plughost.secret_values import (
    HOST_VOCABULARY,
    MAX_SECRET_CHARS,
    MAX_SECRETS,
    MIN_LENGTH,
    SECRET_KEY,
    screen_config,
)

__all__ = ["REDACTED", "SECRET_KEY", "Redact", "SecretRedactor", "unchanged"]

log = logging.getLogger(__name__)

REDACTED: Final = "[redacted]"
_MATCHERS: Final = 64
"""Automatons kept, one per set of plugins text was redacted for (a runner's, a plugin's)."""
_WORDS: Final = 2048
"""Host words kept per owner (its id, folder, tools, components)."""
_WORD_LENGTH: Final = 256
_VERDICTS: Final = 4096
"""Answers of :meth:`SecretRedactor.is_host_word` kept until the words change."""


class Redact(Protocol):
    """``redact(text, plugins)``: ``text`` with secrets masked, as text from ``plugins``."""

    def __call__(self, text: str, plugins: Collection[str] = (), /) -> str: ...


def unchanged(text: str, plugins: Collection[str] = (), /) -> str:
    """A :class:`Redact` that masks nothing (a supervisor built without a redactor)."""
    return text


class _Matcher:
    """One automaton over the host's secrets and those of some plugins."""

    def __init__(self, secrets: Mapping[str, bool]) -> None:
        self._automaton = ahocorasick.Automaton()
        for value, host in secrets.items():
            self._automaton.add_word(value, (len(value), host, value))
        self._automaton.make_automaton()

    def spans(self, text: str) -> list[tuple[int, int, str, bool]] | None:
        """``(start, end, secret, is_host's)`` of every occurrence; None when there are too many.

        Secrets are at least ``MIN_LENGTH`` long, so text holds at most
        ``len(text) / MIN_LENGTH`` occurrences that do not overlap; more means
        secrets overlapping everywhere (a plugin's nested values), and the
        caller masks the whole text rather than spend time per occurrence.
        """
        limit = len(text) // MIN_LENGTH + 1
        found: list[tuple[int, int, str, bool]] = []
        for end, (length, host, value) in self._automaton.iter(text):
            if len(found) >= limit:
                return None
            found.append((end - length + 1, end + 1, value, host))
        return found


class SecretRedactor:
    """Remembers secret values, the host's and each plugin's, and masks them in text."""

    def __init__(self) -> None:
        self._host: dict[str, None] = {}
        self._plugins: dict[str, dict[str, None]] = {}
        self._words: dict[str, tuple[str, ...]] = {}
        self._joined: str | None = None
        self._verdicts: dict[str, bool] = {}  # is_host_word, for the words as they are now
        self._matchers: collections.OrderedDict[frozenset[str], _Matcher | None] = (
            collections.OrderedDict()
        )

    # --- learning ---------------------------------------------------------------------

    def add(self, value: str) -> None:
        """Mask ``value`` everywhere from now on: a secret of the host's (short ones are not)."""
        if isinstance(value, str) and len(value) >= MIN_LENGTH and value not in self._host:
            self._host[value] = None
            self._matchers.clear()

    def add_environment(self, environ: Mapping[str, str]) -> None:
        """Learn the values of the host's secret-looking environment variables."""
        for name, value in environ.items():
            if SECRET_KEY.search(name):
                self.add(value)

    def learn_config(self, plugin_id: str, config: Mapping[str, Any]) -> list[str]:
        """Learn the secrets in ``plugin_id``'s configuration, to mask in its text.

        The values of the previous configuration stay masked too (its runner may
        still be writing), as far as the per-plugin bounds leave room.

        Returns:
            The warnings logged: values not learned, and why (never the values).
        """
        screened = screen_config(config, self.is_host_word)
        previous = self._plugins.get(plugin_id, {})
        kept = dict.fromkeys(screened.secrets)
        total = sum(map(len, kept))
        for old in previous:
            if len(kept) >= MAX_SECRETS or total + len(old) > MAX_SECRET_CHARS:
                break
            if old not in kept:
                kept[old] = None
                total += len(old)
        if kept != previous:
            self._plugins[plugin_id] = kept
            self._forget(plugin_id)
        warnings = screened.warnings(plugin_id)
        for warning in warnings:
            log.warning("%s", warning)
        return warnings

    def protect(self, owner: str, words: Iterable[str]) -> None:
        """Make ``words`` host words on ``owner``'s behalf, replacing its previous ones.

        ``owner`` is a plugin id (itself protected) and ``words`` what the host
        registered for it (its folder, tool and component names); ``""`` owns
        the host's own (event kinds). No plugin's secret may occur in a host word.
        """
        kept = [owner] if owner else []
        kept += [w[:_WORD_LENGTH] for w in words if isinstance(w, str) and w][:_WORDS]
        if tuple(kept) != self._words.get(owner):
            self._words[owner] = tuple(kept)
            self._joined = None
            self._verdicts.clear()

    def is_host_word(self, value: str) -> bool:
        """Whether ``value`` occurs in one of the host's words."""
        verdict = self._verdicts.get(value)
        if verdict is None:
            if len(self._verdicts) >= _VERDICTS:
                self._verdicts.clear()
            if self._joined is None:
                every = [*HOST_VOCABULARY, *(w for words in self._words.values() for w in words)]
                self._joined = "\0".join(every)
            verdict = self._verdicts[value] = value in self._joined
        return verdict

    # --- masking ----------------------------------------------------------------------

    def redact(self, text: str, plugins: Collection[str] = ()) -> str:
        """``text`` with secrets replaced by ``[redacted]``.

        Args:
            text: What to log or publish.
            plugins: The plugins ``text`` comes from: their secrets are masked
                too. Empty for text the host wrote (only its own secrets).
        """
        if not text:
            return text
        matcher = self._matcher(plugins)
        if matcher is None:
            return text
        spans = matcher.spans(text)
        if spans is None:
            return REDACTED
        return self._masked(text, spans) if spans else text

    def redact_data(self, data: Any, plugins: Collection[str] = ()) -> Any:
        """Redact every string inside nested dicts and lists (see :meth:`redact`)."""
        if isinstance(data, str):
            return self.redact(data, plugins)
        if isinstance(data, Mapping):
            return {k: self.redact_data(v, plugins) for k, v in data.items()}
        if isinstance(data, list | tuple):
            return [self.redact_data(v, plugins) for v in data]
        return data

    def for_plugins(self, plugins: Collection[str]) -> Callable[[str], str]:
        """``redact`` for text from ``plugins`` (a live collection is read at every call)."""
        return functools.partial(self.redact, plugins=plugins)

    def _masked(self, text: str, spans: list[tuple[int, int, str, bool]]) -> str:
        """Mask the union of ``spans``, less plugin secrets that became host words."""
        banned = {value for _, _, value, host in spans if not host and self.is_host_word(value)}
        spans = [s for s in spans if s[2] not in banned]
        spans.sort()
        pieces: list[str] = []
        done = 0
        for start, end, _, _ in spans:
            if end <= done:
                continue
            if start >= done:
                pieces.append(text[done:start])
                pieces.append(REDACTED)
            done = end
        pieces.append(text[done:])
        return "".join(pieces)

    def _matcher(self, plugins: Collection[str]) -> _Matcher | None:
        key = frozenset(p for p in plugins if self._plugins.get(p))
        if key in self._matchers:
            self._matchers.move_to_end(key)
            return self._matchers[key]
        secrets = {value: False for p in sorted(key) for value in self._plugins[p]}
        secrets.update(dict.fromkeys(self._host, True))
        matcher = _Matcher(secrets) if secrets else None
        self._matchers[key] = matcher
        if len(self._matchers) > _MATCHERS:
            self._matchers.popitem(last=False)
        return matcher

    def _forget(self, plugin_id: str) -> None:
        """Drop the automatons that hold ``plugin_id``'s secrets (rebuilt when next needed)."""
        for key in [k for k in self._matchers if plugin_id in k]:
            del self._matchers[key]
