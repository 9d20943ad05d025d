"""An upstream tool's structured content, checked against its output schema in linear time.

The SDK's client session checks a tool's ``structuredContent`` against the
``outputSchema`` the server declared, with jsonschema, whose ``pattern`` keywords
run on Python's backtracking ``re``. Both the schema and the content come from the
server: one that declares ``"pattern": "^(a+)+$"`` and answers ``"aaaa...!"``
would hold the host's event loop for as long as it likes (every two more letters
take four times as long: under a second for 24 letters, hours for 40), every
plugin and client of the host with it. :func:`check_outputs_safely` has a session
build its output validators from
:func:`~plughost.tools.patterns.safe_validator_class`, which matches patterns
with RE2, as the host checks arguments; a schema with a pattern RE2 cannot match
safely is an invalid schema, which the session reports as it reports any
(``RuntimeError``), so the call fails with the reason.

What does not live here: the check of a tool's arguments
(:mod:`plughost.tools.arguments`).
"""

from __future__ import annotations

from typing import Any

from plughost.tools.patterns import PatternError, check_patterns, safe_validator_class

__all__ = ["check_outputs_safely"]

_BUILDER = "_output_schema_validator"  # where the SDK's session builds a tool's validator


def check_outputs_safely(session: Any) -> None:
    """Have ``session`` (an SDK ``ClientSession``) check outputs with RE2 patterns.

    Raises:
        RuntimeError: this SDK's session builds its validators elsewhere, so the
            outputs of its servers could not be checked safely.
    """
    if not callable(getattr(type(session), _BUILDER, None)):
        raise RuntimeError(
            f"the mcp SDK's ClientSession has no {_BUILDER}: plughost cannot check "
            "upstream outputs in linear time with this version; install the one in "
            "constraints.txt"
        )
    built: dict[str, tuple[object, Any]] = {}  # a tool's schema, and its validator

    def validator(name: str, schema: dict[str, Any]) -> Any:
        held = built.get(name)
        if held is not None and held[0] is schema:  # the session keeps a schema until relisted
            return held[1]
        from jsonschema import SchemaError
        from referencing import Registry

        checking = safe_validator_class()
        try:
            check_patterns(schema)
            checking.check_schema(schema)
        except (PatternError, SchemaError) as exc:
            raise RuntimeError(f"Invalid schema for tool {name}: {exc}") from None
        # An empty registry: a $ref resolves within the schema only, as in the SDK.
        made = checking(schema, registry=Registry())
        built[name] = (schema, made)
        return made

    setattr(session, _BUILDER, validator)
