"""``plughost check DIR...``: every problem of a set of plugin folders, each with a fix.

Three passes, each reporting everything it finds, with the file, the line
when known, and what to do:

1. **Folders, manifests, configuration**, without running plugin code: every
   field problem of ``_manifest.json`` on its own (at the line of its key),
   TOML errors in ``config.toml``, duplicate ids; unknown manifest fields and
   a missing ``plughost_sdk`` range are warnings.
2. **Loading**, in the throwaway runners of a private :class:`PluginHost`
   (its own temporary data directories, no restarts): import, ``create_plugin()``,
   ``config_model``, ``on_load``. The capabilities the embedding application
   would answer are answered by stand-ins or the operator's answers
   (:mod:`plughost.cli.stand_ins`), and the report lists them per plugin.
3. **Declarations** of the plugins that loaded: model-safe tool names, a valid
   JSON Schema (Draft 2020-12) of type object, ``required`` names that exist;
   a name the host keeps for itself (``tool_search``, or a look-alike of it)
   is an error; missing descriptions, legacy ``@Action`` and names the host
   must qualify because two plugins share them (or look-alikes) are warnings.
   Commands, event handlers and hook handlers are checked too
   (:mod:`plughost.cli.component_checks`), and the report lists what each
   plugin declares besides tools.

A plugin is ok when it has no error; warnings never fail a check.

What does not live here: printing the report (the CLI).
"""

from __future__ import annotations

import ast
import json
import re
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from plughost.cli.component_checks import component_findings, word
from plughost.cli.network_checks import network_use
from plughost.cli.one_shot import throwaway_settings
from plughost.cli.stand_ins import Answered, StandIns
from plughost.host import PluginHost
from plughost.plugins.source import (
    CONFIG_FILE,
    PluginProblem,
    PluginSource,
    is_plugin_dir,
    read_plugin,
    scan_plugin_dirs,
)
from plughost.settings import HostSettings
from plughost.tools.reserved import reserved_name
from plughost_sdk import __version__ as sdk_version
from plughost_sdk.declarations import PARAMETER_DETAILS_HEADING, TOOL_NAME_PATTERN
from plughost_sdk.errors import ManifestError
from plughost_sdk.manifest import MANIFEST_FILE
from plughost_sdk.plugin_files import read_file

__all__ = ["CheckProblem", "CheckReport", "Severity", "check_plugins"]

Severity = Literal["error", "warning"]

_GUIDE = "docs/plugin-authors.md"
# A fix the message already gives follows its last "; " or ": " and starts with one of these.
_FIX_START = re.compile(
    r"[;:] (?=(?:add|use|remove|set|widen|write|give|install|return|declare|define|make|"
    r"choose|pass|rename)\b)"
)
_FIXES = {
    "manifest": f"correct {MANIFEST_FILE}; its fields are described in docs/operators.md",
    "import": "make plugin.py import without errors; the line shown raised",
    "syntax": "correct the syntax at the line shown",
    "factory": "define a module-level create_plugin() that returns an instance of your Plugin",
    "config": "make config.toml match the plugin's config_model; the message names each field",
    "config_file": "correct config.toml at the line shown; it must be valid TOML",
    "on_load": "make on_load succeed, or catch what may fail in it; the line shown raised",
    "crashed": "find what ends the process while plugin.py loads (os._exit, a crashing C library)",
    "start": "make importing plugin.py and on_load faster (move slow work to the first call)",
}


_DECORATORS = frozenset(
    {"Tool", "Action", "Command", "EventHandler", "HookHandler", "API", "HomeCard"}
)


@dataclass(frozen=True, slots=True)
class CheckProblem:
    """One problem: where it is, what it is, and how to fix it."""

    plugin: str
    file: str
    line: int
    message: str
    fix: str
    severity: Severity = "error"

    def describe(self) -> str:
        """One readable line: ``error: plugin: file:line: message (fix: ...)``."""
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{self.severity}: {self.plugin}: {where}: {self.message} (fix: {self.fix})"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form, for ``plughost check --json``."""
        return asdict(self)


@dataclass(slots=True)
class CheckReport:
    """What ``check_plugins`` found.

    Attributes:
        problems: Every problem, errors and warnings, in the order found.
        plugins_ok: Ids of the plugins that loaded without an error, sorted.
        components: Each loaded plugin's commands, handlers, APIs and cards, in the
            dict shape of MaiBot's SDK.
        stood_in: Per plugin, each capability it called while loading that the
            embedding application would answer, and whether the operator's
            ``answers`` or a marked ``stand-in`` answered it here.
    """

    problems: list[CheckProblem] = field(default_factory=list)
    plugins_ok: list[str] = field(default_factory=list)
    components: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    stood_in: dict[str, dict[str, Answered]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when there is no error (warnings allowed)."""
        return not self.errors

    @property
    def errors(self) -> list[CheckProblem]:
        """The problems of severity ``error``."""
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[CheckProblem]:
        """The problems of severity ``warning``."""
        return [p for p in self.problems if p.severity == "warning"]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form, for ``plughost check --json``."""
        return {
            "ok": self.ok,
            "plugins_ok": list(self.plugins_ok),
            "components": {k: list(v) for k, v in self.components.items()},
            "stood_in": {k: dict(v) for k, v in self.stood_in.items()},
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "problems": [p.to_dict() for p in self.problems],
        }


async def check_plugins(
    dirs: list[Path],
    *,
    timeout: float = 20.0,
    settings: HostSettings | None = None,
    answers: dict[str, Any] | None = None,
) -> CheckReport:
    """Check plugin folders (or folders of plugin folders) and report every problem.

    Args:
        dirs: Plugin folders, or folders holding plugin folders.
        timeout: Seconds each plugin may take to start and load.
        settings: The host's settings (network grants); the defaults when None.
        answers: Capability name -> the answer plugins get while loading, for
            capabilities the embedding application provides
            (:func:`plughost.cli.stand_ins.load_answers`); the others get stand-ins.

    Returns:
        The report; ``report.ok`` is False when any plugin has an error.
    """
    report = CheckReport()
    for directory in dirs:
        report.problems.extend(_directory_problems(Path(directory)))
    sources, folder_problems = scan_plugin_dirs(dirs)
    for problem in folder_problems:
        report.problems.extend(_folder_problems(problem))
    for source in sources:
        report.problems.extend(_manifest_warnings(source))
        report.problems.extend(_network_warnings(source, settings or HostSettings()))
    stand_ins = StandIns(dict(answers or {}))
    outcomes = await _load(sources, timeout, stand_ins)
    report.stood_in = {k: dict(sorted(v.items())) for k, v in sorted(stand_ins.used.items())}
    for source in sources:
        outcome = outcomes[source.plugin_id]
        if isinstance(outcome, PluginProblem):
            report.problems.append(_load_problem(source.plugin_id, outcome))
        else:
            report.problems.extend(_declaration_problems(source, *outcome))
            report.components[source.plugin_id] = outcome[2]
    report.problems.sort(key=lambda p: p.plugin)  # stable: each plugin's in the order found
    failed = {p.plugin for p in report.errors}
    report.plugins_ok = sorted(
        s.plugin_id
        for s in sources
        if s.plugin_id not in failed and not isinstance(outcomes[s.plugin_id], PluginProblem)
    )
    return report


def _directory_problems(directory: Path) -> list[CheckProblem]:
    if not directory.is_dir():
        return [
            CheckProblem(
                str(directory),
                str(directory),
                0,
                "directory not found",
                "pass a plugin folder, or a folder that holds plugin folders",
            )
        ]
    children = [c for c in directory.iterdir() if not c.name.startswith((".", "_"))]
    if is_plugin_dir(directory) or any(is_plugin_dir(child) for child in children):
        return []
    return [
        CheckProblem(
            directory.name,
            str(directory),
            0,
            "no plugin folder here (a plugin folder holds plugin.py and _manifest.json)",
            "pass a plugin folder or the folder holding them; `plughost new NAME` creates one",
        )
    ]


def _folder_problems(problem: PluginProblem) -> list[CheckProblem]:
    """Problems found before any plugin code ran; each manifest problem on its own."""
    plugin = problem.plugin_id or problem.path.name
    if problem.stage == "manifest":
        try:
            read_plugin(problem.path)
        except ManifestError as exc:
            return [_file_problem(plugin, exc.path, text) for text in exc.problems]
    return [_file_problem(plugin, problem.file or str(problem.path), problem.reason)]


def _file_problem(
    plugin: str, file: str, text: str, severity: Severity = "error", fix: str = ""
) -> CheckProblem:
    message, found_fix = _split_fix(
        text, "config_file" if file.endswith(CONFIG_FILE) else "manifest"
    )
    fix = fix or found_fix
    line = _line_in_text(text)
    if not line and file.endswith(MANIFEST_FILE):
        key = re.match(r"(?:field|unknown field) '([^'.\[]+)", text)
        line = _key_lines(Path(file)).get(key.group(1), 0) if key else 0
    return CheckProblem(plugin, file, line, message, fix, severity)


def _manifest_warnings(source: PluginSource) -> list[CheckProblem]:
    file = str(source.path / MANIFEST_FILE)
    found = [
        _file_problem(source.plugin_id, file, text, "warning", "remove it, or correct its spelling")
        for text in source.warnings
    ]
    if source.manifest.plughost_sdk is None and not source.manifest.targets_maibot:
        message = "no 'plughost_sdk' range: the plugin claims to work with every plughost-sdk"
        wanted = {"min_version": sdk_version, "max_version": sdk_version.split(".")[0] + ".99.99"}
        fix = f'add "plughost_sdk": {json.dumps(wanted)}'
        found.append(CheckProblem(source.plugin_id, file, 0, message, fix, "warning"))
    return found


def _network_warnings(source: PluginSource, settings: HostSettings) -> list[CheckProblem]:
    used = network_use(source, settings)
    if used is None:
        return []
    file, line, module = used
    message = (
        f"the code imports {module} but the plugin has no network grant: the sandbox will "
        "refuse every connection it makes"
    )
    fix = (
        "run plughost serve --learn to see where it connects, then "
        f"plughost grant {source.plugin_id} HOST (written to plughost.toml)"
    )
    return [CheckProblem(source.plugin_id, file, line, message, fix, "warning")]


_Loaded = tuple[list[dict[str, Any]], dict[str, str], list[dict[str, Any]]]
"""A loaded plugin's tool declarations (wire form), tool name -> model-facing name, components."""
_Finding = tuple[str, str, Severity]
"""message, fix, severity"""


async def _load(
    sources: list[PluginSource], timeout: float, stand_ins: StandIns
) -> dict[str, _Loaded | PluginProblem]:
    """Load every plugin in a private host; return its declarations and model names, or why not."""
    outcomes: dict[str, _Loaded | PluginProblem] = {}
    if not sources:
        return outcomes
    with tempfile.TemporaryDirectory(prefix="plughost-check-") as scratch:
        settings = throwaway_settings(Path(scratch), timeout)
        host = PluginHost([s.path for s in sources], settings=settings)
        stand_ins.install(host, sources)
        try:
            await host.start()
            for source in sources:
                outcomes[source.plugin_id] = _outcome(host, source, timeout)
        finally:
            await host.aclose()
    return outcomes


def _outcome(host: PluginHost, source: PluginSource, timeout: float) -> _Loaded | PluginProblem:
    plugin_id = source.plugin_id
    problem = host.problems.get(plugin_id) or host.problems.get(str(source.path))
    if problem is not None:
        return problem
    runner = host.runner_for(plugin_id)
    reported = runner.report.get("loaded", []) if runner is not None else []
    loaded = next((p for p in reported if p.get("plugin_id") == plugin_id), None)
    if loaded is None:
        return PluginProblem(
            source.path,
            "start",
            f"loading did not finish within {timeout:g} s",
            plugin_id,
        )
    names = {c.name: host.query.model_name(c) for c in host.components.by_plugin(plugin_id)}
    return list(loaded.get("tools", [])), names, list(loaded.get("components", []))


def _load_problem(plugin_id: str, problem: PluginProblem) -> CheckProblem:
    stage, message = problem.stage, problem.reason
    if stage == "import" and message.startswith("syntax error"):
        stage, message = "syntax", re.sub(r"^syntax error at .+?:\d+:", "syntax error:", message)
    lost = stage in {"crashed", "start"}  # the runner was given up (it never gets a restart)
    # check's one timeout is both the supervisor's ready deadline and the runner's
    # on_load deadline: whichever fires first, the plugin took too long to load.
    late = stage == "on_load" and message.startswith("on_load did not finish within")
    if late or (lost and "not ready within" in message):
        stage, message = "start", f"loading did not finish in time: {message}"
    elif lost and not message.startswith(("unresponsive", "loading did not")):
        stage, message = "crashed", f"the runner died while loading the plugin: {message}"
    message, fix = _split_fix(message, stage)
    file = problem.file or str(problem.path / "plugin.py")
    return CheckProblem(
        plugin_id, file, problem.line or _line_in_text(problem.reason), message, fix
    )


def _declaration_problems(
    source: PluginSource,
    tools: list[dict[str, Any]],
    model_names: dict[str, str],
    components: list[dict[str, Any]],
) -> list[CheckProblem]:
    plugin_py = source.path / "plugin.py"
    lines = _declaration_lines(plugin_py)
    found: list[CheckProblem] = []
    for tool in tools:
        name = str(tool.get("name", ""))
        line = lines.get(str(tool.get("handler", "")), 0)
        found.extend(
            CheckProblem(
                source.plugin_id, str(plugin_py), line, f"tool {name!r}: {message}", fix, severity
            )
            for message, fix, severity in _tool_findings(name, tool, model_names.get(name, name))
        )
    for component in components:
        metadata = component.get("metadata") or {}
        line = lines.get(str(metadata.get("handler_name", "")), 0)
        what = f"{word(str(component.get('type', '')))} {component.get('name')!r}"
        found.extend(
            CheckProblem(
                source.plugin_id, str(plugin_py), line, f"{what}: {message}", fix, severity
            )
            for message, fix, severity in component_findings(source.plugin_id, component)
        )
    return found


def _tool_findings(name: str, tool: dict[str, Any], model_name: str) -> list[_Finding]:
    findings: list[_Finding] = []
    if not TOOL_NAME_PATTERN.match(name):
        fix = "use letters, digits, '_' and '-', at most 64 characters"
        findings.append(("the name is not accepted by model APIs", fix, "error"))
    raw_schema = tool.get("parameters_schema")
    schema: dict[str, Any] = raw_schema if isinstance(raw_schema, dict) else {"type": None}
    findings.extend(_schema_findings(schema))
    brief = str(tool.get("brief_description") or "").strip()
    # Without a description the SDK falls back to the name (its '_' as spaces, see
    # plughost_sdk.declarations) or the generated parameter list.
    if brief in ("", name, name.replace("_", " "), PARAMETER_DETAILS_HEADING):
        message = "has no description, and the model chooses tools by their descriptions"
        findings.append((message, "give @Tool a brief_description of a sentence or two", "warning"))
    properties = schema.get("properties")
    bare = [
        key
        for key, fragment in (properties.items() if isinstance(properties, dict) else ())
        if not (isinstance(fragment, dict) and fragment.get("description"))
    ]
    if bare:
        message = f"parameter {', '.join(map(repr, bare))} has no description"
        fix = "give each parameter a description saying what the model should put there"
        findings.append((message, fix, "warning"))
    if tool.get("legacy_action"):
        fix = f"declare it with @Tool (see 'Porting' in {_GUIDE})"
        findings.append(("is declared with the deprecated @Action", fix, "warning"))
    held = reserved_name(model_name)
    if held is not None:
        alike = "is" if held == model_name else "looks like"
        message = (
            f"its name {alike} {held!r}, which the host keeps for its own tool: the model "
            "never sees this tool"
        )
        findings.append((message, "rename the tool", "error"))
    elif model_name != name:
        message = (
            "another plugin has a tool of this name, or of one a model could mistake for it, "
            f"so the model sees it as {model_name!r}"
        )
        findings.append((message, "give the tool a more specific name", "warning"))
    return findings


def _schema_findings(schema: dict[str, Any]) -> list[_Finding]:
    fix = f"correct the parameters of @Tool (see 'Parameters and schemas' in {_GUIDE})"
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "the top level"
        return [
            (f"parameters_schema is invalid JSON Schema at {where}: {exc.message}", fix, "error")
        ]
    if schema.get("type") != "object":
        return [("parameters_schema must have type 'object', as model APIs require", fix, "error")]
    properties = schema.get("properties") or {}
    unknown = [name for name in schema.get("required") or [] if name not in properties]
    if unknown:
        message = f"'required' lists {', '.join(map(repr, unknown))}, not among its properties"
        return [(message, "declare those parameters, or remove them from 'required'", "error")]
    return []


def _split_fix(text: str, stage: str) -> tuple[str, str]:
    """Split "what is wrong; what to do" messages; otherwise use the stage's usual fix."""
    matches = list(_FIX_START.finditer(text))
    if matches:
        cut = matches[-1].start()
        return text[:cut], text[cut + 2 :]
    return text, _FIXES.get(stage, "see the message")


def _line_in_text(text: str) -> int:
    """The line a JSON or TOML parser named in its message (``line 3``), or 0."""
    match = re.search(r"\bline (\d+)", text)
    return int(match.group(1)) if match else 0


def _key_lines(manifest: Path) -> dict[str, int]:
    """The line of each top-level key of a JSON object file; {} if it cannot be read."""
    try:
        text = (read_file(manifest.parent, manifest.name) or b"").decode("utf-8")
    except (ManifestError, UnicodeDecodeError):
        return {}
    decoder = json.JSONDecoder()
    lines: dict[str, int] = {}
    index = text.find("{") + 1
    try:
        while 0 < index < len(text):
            key_start = text.index('"', index)
            key, after_key = decoder.raw_decode(text, key_start)
            lines.setdefault(str(key), text.count("\n", 0, key_start) + 1)
            value_start = text.index(":", after_key) + 1
            value_start += len(text[value_start:]) - len(text[value_start:].lstrip())
            _, index = decoder.raw_decode(text, value_start)
            index = text.find(",", index) + 1
    except (ValueError, RecursionError):
        pass  # a malformed or too deeply nested tail: keep the keys found so far
    return lines


def _declaration_lines(plugin_py: Path) -> dict[str, int]:
    """Handler method name -> line of its declaring decorator (``@Tool``, ``@Command``...)."""
    try:
        tree = ast.parse((read_file(plugin_py.parent, plugin_py.name) or b"").decode("utf-8"))
    except (ManifestError, SyntaxError, ValueError, RecursionError, MemoryError):
        return {}  # refused, too big, or too deep for the parser: no lines, the check goes on
    lines: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if getattr(target, "id", getattr(target, "attr", "")) in _DECORATORS:
                    lines[node.name] = decorator.lineno
    return lines
