"""A MaiBot manifest's ``capabilities`` are read as MaiBot reads them; plughost's stay strict.

MaiBot's host (``src/plugin_runtime/runner/manifest_validator.py``,
``PluginManifest._validate_capabilities``) strips each name, refuses an empty
one and drops repeats, keeping the first; it checks nothing else. The cases
below restate that rule; the real ``maibot-plugin-sdk`` supplies the names a
MaiBot plugin really calls.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import maibot_sdk
import pytest

from plughost_sdk.errors import ManifestError
from plughost_sdk.manifest import parse_manifest

BASE: dict[str, Any] = {
    "manifest_version": 2,
    "id": "community.probe",
    "version": "1.0.0",
    "name": "probe",
    "author": {"name": "community"},
}
MAIBOT = {**BASE, "host_application": {"min_version": "1.0.0"}, "sdk": {"min_version": "2.0.0"}}
NATIVE = {**BASE, "plughost_sdk": {"min_version": "0.1.0"}}


def _sdk_capability_names() -> list[str]:
    """Every capability name the real SDK's ``ctx`` proxies call."""
    root = Path(maibot_sdk.__file__).parent
    found = re.compile(r"call_capability\(\s*\"([^\"]+)\"")
    return sorted({n for f in root.rglob("*.py") for n in found.findall(f.read_text("utf-8"))})


@pytest.mark.parametrize(
    ("declared", "maibot_reads"),
    [
        ([" send.text ", "send.text", "config.get"], ["send.text", "config.get"]),
        (["logger", "send.text", "logger"], ["logger", "send.text"]),
        (["\tllm.generate\n", "Send.Text"], ["llm.generate", "Send.Text"]),
        ([], []),
    ],
)
def test_a_maibot_manifest_strips_and_deduplicates_like_maibot(
    declared: list[str], maibot_reads: list[str]
) -> None:
    assert parse_manifest({**MAIBOT, "capabilities": declared}).capabilities == maibot_reads


def test_an_empty_capability_name_is_refused_as_maibot_refuses_it() -> None:
    with pytest.raises(ManifestError, match=r"field 'capabilities': an empty capability name"):
        parse_manifest({**MAIBOT, "capabilities": ["send.text", "  "]})


def test_a_name_no_handler_can_answer_is_a_warning_for_maibot_and_an_error_for_plughost() -> None:
    maibot = parse_manifest({**MAIBOT, "capabilities": ["logger", "Send.Text", "send.*"]})

    assert maibot.warnings() == [
        "field 'capabilities': 'logger' is not a capability name ('group.name'), so no "
        "capability handler can answer it and the plugin cannot call it: remove it, or write "
        "the capability the plugin calls (e.g. 'send.text')",
        "field 'capabilities': 'Send.Text' does not look like a capability name (lowercase "
        "'group.name', e.g. 'send.text'), so a host is unlikely to answer it: correct its "
        "spelling",
    ]
    with pytest.raises(ManifestError, match=r"'logger' is not a capability; write 'group\.name'"):
        parse_manifest({**NATIVE, "capabilities": ["logger"]})
    with pytest.raises(ManifestError, match=r"' send\.text' is not a capability"):
        parse_manifest({**NATIVE, "capabilities": [" send.text"]})


def test_every_capability_the_real_sdk_calls_is_accepted_by_both_kinds_without_a_warning() -> None:
    names = _sdk_capability_names()

    assert len(names) > 30 and "send.text" in names
    for manifest in (MAIBOT, NATIVE):
        parsed = parse_manifest({**manifest, "capabilities": names})
        assert parsed.capabilities == names
        assert parsed.warnings() == []
