"""_manifest.json: MaiBot v2 manifests load unchanged; every error names file, field and fix."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from plughost_sdk import ManifestError
from plughost_sdk.manifest import (
    Manifest,
    VersionRange,
    load_manifest,
    parse_manifest,
    version_in_range,
)

MAIBOT_MANIFEST: dict[str, Any] = {
    "manifest_version": 2,
    "id": "a-dawn.a-tts-plugin",
    "version": "2.1.0",
    "name": "A TTS Plugin",
    "description": "Synthesizes replies as voice messages.",
    "author": {"name": "a-dawn", "url": "https://github.com/a-dawn"},
    "license": "AGPL-3.0",
    "urls": {
        "repository": "https://github.com/a-dawn/a-tts-plugin",
        "homepage": "https://github.com/a-dawn/a-tts-plugin",
        "documentation": "https://github.com/a-dawn/a-tts-plugin#readme",
        "issues": "https://github.com/a-dawn/a-tts-plugin/issues",
    },
    "host_application": {"min_version": "1.0.0", "max_version": "1.99.99"},
    "sdk": {"min_version": "2.0.0", "max_version": "2.99.99"},
    "dependencies": [],
    "capabilities": ["send.text"],
    "i18n": {
        "default_locale": "zh-CN",
        "locales_path": "_locales",
        "supported_locales": ["zh-CN", "en-US"],
    },
}


def _manifest(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(MAIBOT_MANIFEST)
    for key, value in changes.items():
        if value is _DROP:
            data.pop(key)
        else:
            data[key] = value
    return data


_DROP = object()


def _problems(data: Any, path: str = "plugins/tts/_manifest.json") -> ManifestError:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(data, path)
    assert caught.value.path == path
    assert str(caught.value).startswith(f"{path}: ")
    return caught.value


def _write(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_manifest.json").write_text(text, encoding="utf-8")
    return folder


# --- valid manifests -----------------------------------------------------------------------


def test_maibot_v2_manifest_parses_unchanged() -> None:
    manifest = parse_manifest(copy.deepcopy(MAIBOT_MANIFEST))

    assert manifest.model_dump(mode="json", exclude_unset=True) == MAIBOT_MANIFEST
    assert manifest.id == "a-dawn.a-tts-plugin"
    assert manifest.author.url == "https://github.com/a-dawn"
    assert manifest.sdk == VersionRange(min_version="2.0.0", max_version="2.99.99")
    assert manifest.plughost_sdk is None
    assert manifest.warnings() == []


def test_manifest_loads_from_a_plugin_folder(tmp_path: Path) -> None:
    folder = _write(tmp_path / "tts", json.dumps(MAIBOT_MANIFEST, indent=2))

    manifest = load_manifest(folder)

    assert isinstance(manifest, Manifest)
    assert manifest.capabilities == ["send.text"]


def test_plughost_sdk_range_and_dependencies_are_parsed() -> None:
    data = _manifest(
        plughost_sdk={"min_version": "0.1.0", "max_version": "0.99.99"},
        dependencies=[
            {"type": "plugin", "id": "a-dawn.voice-core", "version_spec": ">=1.0"},
            {"type": "python_package", "name": "numpy", "version_spec": ">=1.26"},
        ],
    )

    manifest = parse_manifest(data)

    assert manifest.plughost_sdk == VersionRange(min_version="0.1.0", max_version="0.99.99")
    assert manifest.plugin_dependencies == ["a-dawn.voice-core"]


# --- unknown fields ------------------------------------------------------------------------


def test_unknown_fields_are_kept_and_reported_with_a_suggestion() -> None:
    manifest = parse_manifest(_manifest(capabilites=["send.image"], homepage_url="x"))

    assert manifest.unknown_fields == ["capabilites", "homepage_url"]
    assert manifest.warnings() == [
        "unknown field 'capabilites' is ignored (did you mean 'capabilities'?)",
        "unknown field 'homepage_url' is ignored",
    ]
    assert manifest.capabilities == ["send.text"]


def test_unknown_nested_field_is_an_error_naming_its_path() -> None:
    author = {"name": "a-dawn", "emial": "a@example.org"}

    error = _problems(_manifest(author=author))

    assert error.problems == [
        "field 'author.emial': Extra inputs are not permitted: remove it or check its spelling"
    ]


# --- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["id", "version", "name", "author", "manifest_version"])
def test_missing_required_field_is_named_with_its_fix(field: str) -> None:
    error = _problems(_manifest(**{field: _DROP}))

    assert error.problems == [f"field '{field}' is required: add it"]


@pytest.mark.parametrize("bad_id", ["tts", "tts.", ".tts", "my plugin.tts", "a..b"])
def test_bad_plugin_id_is_rejected_with_an_example(bad_id: str) -> None:
    error = _problems(_manifest(id=bad_id))

    (problem,) = error.problems
    assert problem.startswith(f"field 'id': {bad_id!r} is not a plugin id")
    assert "for example 'author.weather'" in problem


@pytest.mark.parametrize("bad_version", ["one", "1..0", "2.x", "v1.0.0", "1.2.3.4", "", "1.0.0\n"])
def test_bad_version_is_rejected_with_an_example(bad_version: str) -> None:
    error = _problems(_manifest(version=bad_version))

    assert error.problems == [f"field 'version': {bad_version!r} is not a version like '1.0.0'"]


@pytest.mark.parametrize(
    "version", ["1", "1.2", "1.0.0-beta.1", "1.0.0+build.5", "1.0.0rc1", "1.0.0.post1", "2.0.dev0"]
)
def test_semver_and_pep440_version_forms_are_accepted(version: str) -> None:
    manifest = parse_manifest(_manifest(version=version, sdk={"max_version": version}))

    assert manifest.version == version
    assert manifest.sdk.max_version == version


def test_bad_version_range_is_rejected_naming_the_nested_field() -> None:
    error = _problems(_manifest(sdk={"min_version": "2.x"}))

    assert error.problems == ["field 'sdk.min_version': '2.x' is not a version like '1.2.3'"]


@pytest.mark.parametrize(
    "capability", ["send", "Send.Text", "send.", "send..text", "send.*.now", "send.text\n"]
)
def test_bad_capability_is_rejected_with_the_expected_form(capability: str) -> None:
    native = {"plughost_sdk": {"min_version": "0.1.0"}}  # a MaiBot manifest only warns
    error = _problems(_manifest(capabilities=["db.query", capability], **native))

    assert error.problems == [
        f"field 'capabilities': {capability!r} is not a capability; write 'group.name' "
        "(e.g. 'send.text') or 'group.*'"
    ]


@pytest.mark.parametrize("capability", ["statistics.local.models", "maisaka.context.append"])
def test_maibots_deeper_capability_names_are_accepted(capability: str) -> None:
    manifest = parse_manifest(_manifest(capabilities=[capability]))

    assert manifest.allows_capability(capability)
    assert not manifest.allows_capability("statistics.local.other")


@pytest.mark.parametrize("version", [1, 3, "2"])
def test_wrong_manifest_version_says_to_set_it_to_2(version: Any) -> None:
    error = _problems(_manifest(manifest_version=version))

    assert error.problems == ["field 'manifest_version' must be 2: set \"manifest_version\": 2"]


def test_wrong_field_type_names_the_field_and_the_value() -> None:
    error = _problems(_manifest(capabilities="send.text"))

    assert error.problems == ["field 'capabilities': Input should be a valid list, got 'send.text'"]


def test_bad_dependency_names_its_index() -> None:
    error = _problems(_manifest(dependencies=[{"type": "npm", "name": "left-pad"}]))

    (problem,) = error.problems
    assert problem.startswith("field 'dependencies[0].type': ")
    assert "'plugin' or 'python_package'" in problem


def test_every_problem_is_reported_at_once() -> None:
    native = {"plughost_sdk": {"min_version": "0.1.0"}}
    error = _problems(_manifest(id="x", version="y", capabilities=["Z"], **native))

    assert [p.split(":")[0] for p in error.problems] == [
        "field 'id'",
        "field 'version'",
        "field 'capabilities'",
    ]


def test_manifest_that_is_not_an_object_is_rejected() -> None:
    error = _problems([MAIBOT_MANIFEST])

    assert error.problems == ["the manifest must be a JSON object ({...})"]


def test_invalid_json_names_the_file_line_and_column(tmp_path: Path) -> None:
    folder = _write(tmp_path / "tts", '{\n  "manifest_version": 2,\n  "id": "a.b",,\n}')

    with pytest.raises(ManifestError) as caught:
        load_manifest(folder)

    path = str(folder / "_manifest.json")
    assert caught.value.path == path
    (problem,) = caught.value.problems
    assert problem.startswith("line 3, column 15: invalid JSON: ")
    assert str(caught.value).startswith(path)


def test_missing_manifest_file_says_every_plugin_needs_one(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as caught:
        load_manifest(tmp_path)

    assert caught.value.path == str(tmp_path / "_manifest.json")
    assert caught.value.problems == ["file not found; every plugin folder needs a _manifest.json"]


def test_manifest_that_is_not_utf8_cannot_be_read(tmp_path: Path) -> None:
    tmp_path.joinpath("_manifest.json").write_bytes(b'{"name": "\xff"}')

    with pytest.raises(ManifestError, match="cannot be read"):
        load_manifest(tmp_path)


# --- capabilities and versions -------------------------------------------------------------


def test_allows_capability_matches_exact_names_only() -> None:
    manifest = parse_manifest(_manifest(capabilities=["send.text"]))

    assert manifest.allows_capability("send.text") is True
    assert manifest.allows_capability("send.image") is False
    assert manifest.allows_capability("db.query") is False


def test_allows_capability_matches_a_whole_group_with_a_star() -> None:
    manifest = parse_manifest(_manifest(capabilities=["db.*"]))

    assert manifest.allows_capability("db.query") is True
    assert manifest.allows_capability("db.save") is True
    assert manifest.allows_capability("send.text") is False


def test_manifest_without_capabilities_allows_none() -> None:
    manifest = parse_manifest(_manifest(capabilities=[]))

    assert manifest.allows_capability("send.text") is False


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("0.1.0", True),
        ("0.5", True),
        ("0.99.99", True),
        ("0.0.9", False),
        ("1.0.0", False),
        ("0.100.0", False),
    ],
)
def test_version_in_range_compares_numerically(version: str, expected: bool) -> None:
    allowed = VersionRange(min_version="0.1.0", max_version="0.99.99")

    assert version_in_range(version, allowed) is expected


def test_version_in_range_with_open_ends() -> None:
    assert version_in_range("99.0.0", VersionRange(min_version="1.0.0")) is True
    assert version_in_range("0.9.0", VersionRange(min_version="1.0.0")) is False
    assert version_in_range("0.0.1", VersionRange(max_version="1.0.0")) is True
    assert version_in_range("1.0.1", VersionRange(max_version="1.0.0")) is False
    assert version_in_range("5.5.5", VersionRange()) is True


def test_a_maibot_manifest_targets_maibot() -> None:
    assert parse_manifest(_manifest()).targets_maibot


def test_a_plughost_sdk_range_makes_a_manifest_plughost_native() -> None:
    native = _manifest(plughost_sdk={"min_version": "0.1.0"})

    assert not parse_manifest(native).targets_maibot


def test_a_manifest_without_any_sdk_range_is_plughost_native() -> None:
    bare = _manifest(host_application=_DROP, sdk=_DROP)

    assert not parse_manifest(bare).targets_maibot
