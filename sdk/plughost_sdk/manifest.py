"""``_manifest.json``: the plugin's identity, compatibility and permissions.

``plughost_sdk`` is the range of plughost SDK versions the plugin supports and
is enforced at load. ``sdk`` and ``host_application`` are MaiBot's ranges: they
are accepted and kept, not enforced, because they describe another SDK. A
manifest with one of them and no ``plughost_sdk`` range targets MaiBot
(:attr:`Manifest.targets_maibot`): the plugin is loaded with ``maibot_sdk``
mapped onto plughost's MaiBot layer.

The schema accepts the fields MaiBot's manifest v2 uses, so existing plugin
folders need no change. A MaiBot-targeting manifest's ``capabilities`` are read
as MaiBot reads them (each name stripped, an empty one refused, duplicates
dropped, nothing else checked); a name no capability handler can answer is a
warning there, where a plughost manifest refuses it. Unknown top-level fields
are kept and reported as warnings (with a suggestion when they look like a
typo), never silently.
Every error names the file, the field and how to fix it.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from plughost_sdk.errors import ManifestError
from plughost_sdk.plugin_files import parse_json, read_file

__all__ = [
    "MANIFEST_FILE",
    "Manifest",
    "ManifestAuthor",
    "ManifestDependency",
    "NetworkAccess",
    "VersionRange",
    "capability_allowed",
    "load_manifest",
    "manifest_sha256",
    "parse_manifest",
    "version_in_range",
]

MANIFEST_FILE = "_manifest.json"
# ASCII only, no leading separator, no "..": an id is one path component (<data_dir>/<id>).
# \Z, not $, here and below: "$" also matches before a final newline, and "a.b\n" is not "a.b".
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]*(?:[.-][A-Za-z0-9_]+)+\Z")
# 1, 1.2, 1.2.3, then a semver "-pre"/"+build" or a PEP 440 "rc1"/".post1"/".dev0" tail.
# Wildcards such as "2.x" are refused: they would silently compare as 2.0.0.
VERSION_PATTERN = re.compile(
    r"^\d+(?:\.\d+){0,2}(?:[-+][0-9A-Za-z.-]+|(?:\.?(?:a|b|rc|dev|post)\d*)+)?\Z"
)
# "send.text", "send.*", "*", and MaiBot's deeper names ("statistics.local.models").
CAPABILITY_PATTERN = re.compile(
    r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*\.(\*|[a-z][a-z0-9_]*)\Z|^\*\Z"
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ManifestAuthor(_Strict):
    """Who wrote the plugin."""

    name: str
    url: str = ""
    email: str = ""


class VersionRange(_Strict):
    """An inclusive version range; either end may be left open."""

    min_version: str = ""
    max_version: str = ""

    @field_validator("min_version", "max_version")
    @classmethod
    def _version_shape(cls, value: str) -> str:
        if value and not VERSION_PATTERN.match(value):
            raise ValueError(f"{value!r} is not a version like '1.2.3'")
        return value


class ManifestDependency(_Strict):
    """Another plugin, or a Python package, this plugin needs."""

    type: Literal["plugin", "python_package"]
    id: str = ""
    name: str = ""
    version_spec: str = ""


class NetworkAccess(_Strict):
    """The network a plugin asks for; without this field its runner has none at all.

    Ports are TCP ports; ``"any"`` asks for every port. The host enforces the
    port lists with Landlock (Linux 6.7 and later); UDP (DNS) is not filtered
    by port, so a plugin granted any network can also send UDP.
    """

    connect: list[int] | Literal["any"] = Field(default_factory=list)
    bind: list[int] | Literal["any"] = Field(default_factory=list)

    @field_validator("connect", "bind")
    @classmethod
    def _ports(cls, value: list[int] | str) -> list[int] | str:
        if isinstance(value, list) and any(not 0 < port < 65536 for port in value):
            raise ValueError("ports are numbers from 1 to 65535, or 'any'")
        return value


class Manifest(BaseModel):
    """A validated plugin manifest."""

    model_config = ConfigDict(extra="allow")

    manifest_version: Literal[2]
    id: str
    version: str
    name: str
    description: str = ""
    author: ManifestAuthor
    license: str = ""
    urls: dict[str, str] = Field(default_factory=dict)
    host_application: VersionRange = Field(default_factory=VersionRange)
    sdk: VersionRange = Field(default_factory=VersionRange)
    plughost_sdk: VersionRange | None = None
    dependencies: list[ManifestDependency] = Field(default_factory=list)
    capabilities: list[str] = Field(default_factory=list)
    network: NetworkAccess | None = None
    i18n: dict[str, Any] = Field(default_factory=dict)
    llm_providers: list[dict[str, Any]] = Field(default_factory=list)
    plugin_type: str = "general"
    display: dict[str, Any] = Field(default_factory=dict)
    changelog: dict[str, Any] | list[Any] | str = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not ID_PATTERN.match(value):
            raise ValueError(
                f"{value!r} is not a plugin id; use at least two parts joined by '.' or '-', "
                "for example 'author.weather'"
            )
        return value

    @field_validator("version")
    @classmethod
    def _version_shape(cls, value: str) -> str:
        if not VERSION_PATTERN.match(value):
            raise ValueError(f"{value!r} is not a version like '1.0.0'")
        return value

    @field_validator("capabilities")
    @classmethod
    def _capability_shape(cls, value: list[str], info: ValidationInfo) -> list[str]:
        ranges = (info.data.get(k) for k in ("plughost_sdk", "sdk", "host_application"))
        if _targets_maibot(*ranges):
            return _maibot_capabilities(value)
        for cap in value:
            if not CAPABILITY_PATTERN.match(cap):
                raise ValueError(
                    f"{cap!r} is not a capability; write 'group.name' (e.g. 'send.text') "
                    "or 'group.*'"
                )
        return value

    @property
    def plugin_dependencies(self) -> list[str]:
        """Ids of the plugins this plugin depends on."""
        return [d.id for d in self.dependencies if d.type == "plugin" and d.id]

    @property
    def targets_maibot(self) -> bool:
        """Whether the plugin was written for MaiBot's SDK (its ranges, no ``plughost_sdk``)."""
        return _targets_maibot(self.plughost_sdk, self.sdk, self.host_application)

    @property
    def unknown_fields(self) -> list[str]:
        """Top-level fields this schema does not know (kept, but worth a warning)."""
        return sorted(self.model_extra or {})

    def allows_capability(self, capability: str) -> bool:
        """Whether the manifest lists ``capability`` (exactly, or via ``group.*``)."""
        return capability_allowed(self.capabilities, capability)

    def warnings(self) -> list[str]:
        """Non-fatal problems, each a sentence with its fix.

        Unknown fields (with a suggestion for likely typos), and capability names
        no handler can answer (only a MaiBot manifest can hold those).
        """
        known = list(Manifest.model_fields)
        notes = []
        for name in self.unknown_fields:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            notes.append(f"unknown field {name!r} is ignored{hint}")
        notes.extend(_capability_warning(cap) for cap in self.capabilities)
        return [note for note in notes if note]


def _capability_warning(cap: str) -> str:
    if CAPABILITY_PATTERN.match(cap):
        return ""
    if "." not in cap:  # a host registers handlers as "group.name" or "group.*" only
        return (
            f"field 'capabilities': {cap!r} is not a capability name ('group.name'), so no "
            "capability handler can answer it and the plugin cannot call it: remove it, or "
            "write the capability the plugin calls (e.g. 'send.text')"
        )
    return (
        f"field 'capabilities': {cap!r} does not look like a capability name (lowercase "
        "'group.name', e.g. 'send.text'), so a host is unlikely to answer it: "
        "correct its spelling"
    )


def _targets_maibot(
    plughost_sdk: VersionRange | None, sdk: VersionRange | None, host: VersionRange | None
) -> bool:
    if plughost_sdk is not None:
        return False
    return any(r.min_version or r.max_version for r in (sdk, host) if r is not None)


def _maibot_capabilities(value: list[str]) -> list[str]:
    """MaiBot's reading: each name stripped, an empty one refused, the first of duplicates kept."""
    names: list[str] = []
    for cap in value:
        name = cap.strip()
        if not name:
            raise ValueError("an empty capability name: remove it")
        if name not in names:
            names.append(name)
    return names


def capability_allowed(patterns: list[str] | tuple[str, ...], capability: str) -> bool:
    """Whether ``patterns`` (``group.name``, ``group.*`` or ``*``) cover ``capability``.

    The one reading of a capability list: a manifest's, and a remote runner's grants.
    """
    group = capability.split(".", 1)[0]
    return any(c in (capability, f"{group}.*", "*") for c in patterns)


def manifest_sha256(plugin_dir: Path) -> str:
    """The hex SHA-256 of ``<plugin_dir>/_manifest.json``'s bytes, as they are on disk.

    What a remote runner offers and what an operator pins a credential to
    (``--pin-manifest``): both sides compute it here, so they agree.

    Raises:
        OSError: the file cannot be read.
    """
    return hashlib.sha256((plugin_dir / MANIFEST_FILE).read_bytes()).hexdigest()


def parse_manifest(data: Any, path: str = MANIFEST_FILE) -> Manifest:
    """Validate manifest data already read from ``path``.

    Raises:
        ManifestError: listing every problem with its field and a fix.
    """
    if not isinstance(data, dict):
        raise ManifestError(path, ["the manifest must be a JSON object ({...})"])
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        raise ManifestError(path, [_describe(err) for err in exc.errors()]) from None


def load_manifest(plugin_dir: Path) -> Manifest:
    """Read and validate ``<plugin_dir>/_manifest.json``.

    The file is read as :mod:`plughost_sdk.plugin_files` reads a plugin's files:
    never through a link, only a regular file of the folder's own, at most
    :data:`~plughost_sdk.plugin_files.MAX_FILE_BYTES`, nested at most
    :data:`~plughost_sdk.plugin_files.MAX_DEPTH` deep.

    Raises:
        ManifestError: the file is missing, refused, is not JSON, or does not validate.
    """
    path = plugin_dir / MANIFEST_FILE
    raw = read_file(plugin_dir, MANIFEST_FILE)
    if raw is None:
        raise ManifestError(
            str(path), ["file not found; every plugin folder needs a _manifest.json"]
        )
    return parse_manifest(parse_json(raw, str(path)), str(path))


_FIXES = {
    "missing": "add it",
    "literal_error": "use the value shown",
    "extra_forbidden": "remove it or check its spelling",
}


def _describe(error: Any) -> str:
    field = _field_path(error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    kind = str(error["type"])
    fix = _FIXES.get(kind)
    if kind == "missing":
        return f"field '{field}' is required: add it"
    if kind == "literal_error" and field == "manifest_version":
        return "field 'manifest_version' must be 2: set \"manifest_version\": 2"
    if kind.endswith("_type") or kind.endswith("_parsing"):
        # "Input should be a valid string" says the fix; the value says where to look.
        message = f"{message}, got {error.get('input')!r}"
    return f"field '{field}': {message}" + (f": {fix}" if fix else "")


def _field_path(loc: tuple[Any, ...]) -> str:
    """Render a pydantic location as ``dependencies[0].type``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def version_in_range(version: str, allowed: VersionRange) -> bool:
    """Whether ``version`` lies within ``allowed`` (numeric comparison of major.minor.patch)."""
    current = _numeric(version)
    if allowed.min_version and current < _numeric(allowed.min_version):
        return False
    return not (allowed.max_version and current > _numeric(allowed.max_version))


def _numeric(version: str) -> tuple[int, int, int]:
    parts = re.findall(r"\d+", version)[:3]
    padded = [int(p) for p in parts] + [0] * (3 - len(parts))
    return padded[0], padded[1], padded[2]
