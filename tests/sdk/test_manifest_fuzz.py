"""Manifest parsing under arbitrary input: a Manifest or a ManifestError, never anything else."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from plughost_sdk.errors import ManifestError
from plughost_sdk.manifest import Manifest, parse_manifest

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=10), children, max_size=3)
    ),
    max_leaves=15,
)

FIELDS = [
    "manifest_version",
    "id",
    "version",
    "name",
    "author",
    "capabilities",
    "dependencies",
    "sdk",
    "plughost_sdk",
    "urls",
    "license",
]


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=10), json_values, max_size=8))
def test_arbitrary_manifests_parse_or_raise_a_manifest_error_naming_the_file(data: dict) -> None:
    try:
        manifest = parse_manifest(data, "plugins/x/_manifest.json")
    except ManifestError as exc:
        assert exc.path == "plugins/x/_manifest.json"
        assert exc.problems
        assert all(isinstance(p, str) and p for p in exc.problems)
        return
    assert isinstance(manifest, Manifest)


@settings(max_examples=100, deadline=None)
@given(json_values)
def test_non_object_manifests_are_refused_clearly(data: object) -> None:
    if isinstance(data, dict):
        return
    try:
        parse_manifest(data, "m.json")
    except ManifestError as exc:
        assert "JSON object" in str(exc)
    else:
        raise AssertionError("a non-object manifest was accepted")
