"""Import plugin folders and bring them to life: module, factory, ctx, config, on_load.

Each ``plugin.py`` is imported under a unique module name as the package of its
folder, so a plugin's relative imports work and two plugins never share module
state. Every failure is captured as a :class:`LoadFailure` naming the plugin,
the stage, the file and line, and the reason; one plugin failing never stops
the others.
"""

from __future__ import annotations

import asyncio
import importlib.util
import re
import site
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from plughost_runner.maibot import imports as maibot_imports
from plughost_runner.plugins.components import ComponentHandler, call_shape, component_handlers
from plughost_runner.plugins.invoker import Handler
from plughost_runner.plugins.llm_providers import ProviderHandler, provider_handlers
from plughost_runner.plugins.sources import SourceOnlyLoader, compile_from_source
from plughost_runner.process.limits import describe_limit_error
from plughost_sdk.context import CapabilityBridge, PluginConfig, PluginContext, PluginPaths
from plughost_sdk.declarations import ToolDeclaration
from plughost_sdk.plugin import Plugin
from plughost_sdk.resources import PromptDeclaration, ResourceDeclaration

if TYPE_CHECKING:  # the MaiBot layer is imported only when a MaiBot plugin loads
    from plughost_sdk.maibot.plugin import MaiBotPlugin

__all__ = ["LoadFailure", "LoadedPlugin", "PluginSpec", "load_plugin", "unload_plugin"]

_Bound = TypeVar("_Bound")

_counter = 0
# Compiled at import, which the fork server does once for every runner it forks.
_NON_WORD = re.compile(r"\W")


@dataclass(frozen=True, slots=True)
class PluginSpec:
    """What the host asks a runner to load (the body of ``plugins.load``)."""

    plugin_id: str
    path: Path
    config: dict[str, Any]
    config_version: str
    data_dir: Path
    temp_dir: Path
    on_load_timeout: float = 30.0
    flavor: str = "plughost"
    """``"maibot"`` when the manifest targets MaiBot: ``maibot_sdk`` is then mapped."""
    version: str = ""
    plugin_sha256: str = ""
    digest_problem: str = ""
    capabilities: tuple[str, ...] = ()
    """What a remote runner tells the host about this plugin (see plughost_runner.remote)."""
    packages: str = ""
    """The directory of the plugin's own installed packages, first on ``sys.path``."""

    def offer(self) -> dict[str, Any]:
        """How a remote runner offers this plugin: id, version, folder digest, capabilities.

        ``digest_problem`` says why the folder has no digest (a link in it, too many
        files); the host refuses such an offer only where a pin needs the digest.
        """
        return {
            "plugin_id": self.plugin_id,
            "version": self.version,
            "plugin_sha256": self.plugin_sha256,
            "digest_problem": self.digest_problem,
            "capabilities": list(self.capabilities),
        }

    @classmethod
    def from_wire(cls, body: dict[str, Any]) -> PluginSpec:
        """Build a spec from its wire form."""
        return cls(
            plugin_id=str(body["plugin_id"]),
            path=Path(body["path"]),
            config=dict(body.get("config") or {}),
            config_version=str(body.get("config_version", "")),
            data_dir=Path(body["data_dir"]),
            temp_dir=Path(body["temp_dir"]),
            on_load_timeout=float(body.get("on_load_timeout", 30.0)),
            flavor=str(body.get("flavor") or "plughost"),
            packages=str(body.get("packages") or ""),
        )


@dataclass(slots=True)
class LoadedPlugin:
    """A plugin that passed every load stage."""

    spec: PluginSpec
    instance: Plugin
    module: ModuleType
    handlers: dict[str, Handler] = field(default_factory=dict)
    components: dict[tuple[str, str], ComponentHandler] = field(default_factory=dict)
    llm_providers: dict[str, ProviderHandler] = field(default_factory=dict)  # by client type
    config_file: str | None = None
    """A MaiBot plugin's config.toml text for the host to write, when it must change."""
    resources: dict[str, Handler] = field(default_factory=dict)  # by URI (or URI template)
    prompts: dict[str, Handler] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The wire form reported to the host."""
        summary: dict[str, Any] = {
            "plugin_id": self.spec.plugin_id,
            "path": str(self.spec.path),
            "tools": [h.declaration.to_wire() for h in self.handlers.values()],
            "components": [c.declaration.to_wire() for c in self.components.values()]
            + [p.to_wire() for p in self.llm_providers.values()],
            "resources": [h.declaration.to_wire() for h in self.resources.values()],
            "prompts": [h.declaration.to_wire() for h in self.prompts.values()],
        }
        if self.config_file is not None:
            summary["config_file"] = self.config_file
        subscriptions = _config_subscriptions(self.instance)
        if subscriptions:
            summary["config_subscriptions"] = subscriptions
        return summary


def _config_subscriptions(instance: Plugin) -> list[str]:
    """The bot configuration scopes a MaiBot plugin subscribes to, as loaded.

    The host sends the bot's ``bot`` and ``model`` configuration only to the
    plugins whose load report lists the scope, so what a plugin subscribes to
    later (its class attribute changed after load) reaches no runner.
    """
    maibot = maibot_imports.as_maibot_plugin(instance)
    if maibot is None:
        return []
    try:
        return maibot.get_config_reload_subscriptions()
    except (TypeError, ValueError):  # checked at load: changed since, so it subscribes to none
        return []


@dataclass(frozen=True, slots=True)
class LoadFailure:
    """Why a plugin did not load."""

    plugin_id: str
    path: str
    stage: str
    reason: str
    file: str = ""
    line: int = 0
    traceback: str = ""

    def to_wire(self) -> dict[str, Any]:
        """The wire form reported to the host."""
        return {
            "plugin_id": self.plugin_id,
            "path": self.path,
            "stage": self.stage,
            "reason": self.reason,
            "file": self.file,
            "line": self.line,
            "traceback": self.traceback,
        }


class _StageError(Exception):
    def __init__(self, stage: str, reason: str, exc: BaseException | None = None) -> None:
        super().__init__(reason)
        self.stage = stage
        self.reason = reason
        self.exc = exc


async def load_plugin(spec: PluginSpec, bridge: CapabilityBridge) -> LoadedPlugin | LoadFailure:
    """Load one plugin; never raises (except cancellation)."""
    try:
        return await _load(spec, bridge)
    except _StageError as err:
        return _failure(spec, err.stage, err.reason, err.exc)


async def _load(spec: PluginSpec, bridge: CapabilityBridge) -> LoadedPlugin:
    module = _import(spec)
    try:
        instance = _create(spec, module)
        config_file: str | None = None
        maibot = maibot_imports.as_maibot_plugin(instance)
        if maibot is not None:
            handlers, config_file = _set_up_maibot(spec, bridge, maibot)
        else:
            ctx = PluginContext(
                spec.plugin_id,
                bridge,
                config=PluginConfig(spec.config, spec.config_version),
                paths=PluginPaths(spec.data_dir, spec.temp_dir),
            )
            instance.ctx = ctx
            validate_config(instance, spec.config)
            handlers = _handlers(spec, instance)
        components = bind_components(instance)
        resources, prompts = _content_handlers(instance)
        await _on_load(spec, instance)
        components = bind_components(instance)  # with the APIs on_load published, if any
        llm_providers = bind_llm_providers(instance)
    except BaseException:
        maibot_imports.unregister_package(module.__name__)
        raise
    return LoadedPlugin(
        spec=spec,
        instance=instance,
        module=module,
        handlers=handlers,
        components=components,
        llm_providers=llm_providers,
        config_file=config_file,
        resources=resources,
        prompts=prompts,
    )


def _set_up_maibot(
    spec: PluginSpec, bridge: CapabilityBridge, instance: MaiBotPlugin
) -> tuple[dict[str, Handler], str | None]:
    """Context, configuration and tools of a MaiBot plugin (see maibot_loader)."""
    from plughost_runner.maibot import (
        loader as maibot_loader,  # tomlkit and the MaiBot layer: only when needed
    )

    try:
        setup = maibot_loader.set_up(
            instance,
            plugin_id=spec.plugin_id,
            folder=spec.path,
            config=spec.config,
            data_dir=spec.data_dir,
            temp_dir=spec.temp_dir,
            bridge=bridge,
        )
    except maibot_loader.MaiBotSetupError as exc:
        raise _StageError(exc.stage, exc.reason) from None
    handlers = {
        declaration.name: _handler(declaration, function, maibot_loader.tool_result)
        for declaration, function in setup.tools
    }
    return handlers, setup.config_file


async def _on_load(spec: PluginSpec, instance: Plugin) -> None:
    try:
        async with asyncio.timeout(spec.on_load_timeout):
            await instance.on_load()
    except TimeoutError as exc:
        raise _StageError(
            "on_load", f"on_load did not finish within {spec.on_load_timeout:g} s", exc
        ) from None
    except Exception as exc:
        raise _StageError("on_load", f"on_load raised {_describe(exc)}", exc) from None


def bind_components(instance: Any) -> dict[tuple[str, str], ComponentHandler]:
    """The plugin's commands, event and hook handlers, APIs and home cards, bound to methods.

    Raises:
        _StageError: with stage ``declare``, naming the component at fault.
    """
    return _declared(component_handlers, instance, "get_components()")


def bind_llm_providers(instance: Any) -> dict[str, ProviderHandler]:
    """The plugin's ``@LLMProvider`` methods, by client type.

    Raises:
        _StageError: with stage ``declare``, naming the provider at fault.
    """
    return _declared(provider_handlers, instance, "get_llm_providers()")


def _declared(bind: Callable[[Any], _Bound], instance: Any, getter: str) -> _Bound:
    try:
        return bind(instance)
    except ValueError as exc:
        raise _StageError("declare", str(exc), exc) from None
    except Exception as exc:
        raise _StageError("declare", f"{getter} raised {_describe(exc)}", exc) from None


def validate_config(instance: Plugin, config: dict[str, Any]) -> None:
    """Check ``config`` against the plugin's ``config_model`` if it has one.

    Raises:
        _StageError: with stage ``config`` and every validation problem.
    """
    model = type(instance).config_model
    if model is None:
        return
    try:
        model.model_validate(config)
    except ValueError as exc:
        raise _StageError("config", f"config.toml is invalid: {exc}", None) from None


def _put_first(packages: str) -> None:
    """Put the plugin's own packages before the host's environment on ``sys.path``.

    They hold only what the host's environment lacks or has in a version the
    plugin cannot use, so they must win over it. The runner's own packages are
    imported before any plugin and were pinned to the same versions for the
    installation, so a copy there never replaces the runner's.
    """
    before = list(sys.path)
    site.addsitedir(packages)  # also runs the directory's .pth files
    added = [entry for entry in sys.path if entry not in before]
    sys.path[:] = [*added, *before]


def _import(spec: PluginSpec) -> ModuleType:
    global _counter
    _counter += 1
    entry = spec.path / "plugin.py"
    if not entry.is_file():
        raise _StageError("import", f"{entry} not found; a plugin folder needs a plugin.py")
    slug = _NON_WORD.sub("_", spec.plugin_id)
    name = f"plughost_plugin_{slug}_{_counter}"
    compile_from_source(spec.path)  # never a .pyc the folder ships (plugins.sources)
    module_spec = importlib.util.spec_from_file_location(
        name,
        entry,
        loader=SourceOnlyLoader(name, str(entry)),
        submodule_search_locations=[str(spec.path)],
    )
    if module_spec is None or module_spec.loader is None:
        raise _StageError("import", f"{entry} cannot be imported")
    if spec.packages and spec.packages not in sys.path:
        _put_first(spec.packages)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    if spec.flavor == "maibot":
        maibot_imports.register_package(name, spec.path)
    try:
        module_spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        maibot_imports.unregister_package(name)
        where = f"{exc.filename}:{exc.lineno}"
        raise _StageError("import", f"syntax error at {where}: {exc.msg}", exc) from None
    except BaseException as exc:
        sys.modules.pop(name, None)
        maibot_imports.unregister_package(name)
        if isinstance(exc, KeyboardInterrupt | asyncio.CancelledError):
            raise
        reason = f"importing plugin.py raised {_describe(exc)}{_undeclared(exc)}"
        raise _StageError("import", reason, exc) from None
    return module


def _create(spec: PluginSpec, module: ModuleType) -> Plugin:
    factory = getattr(module, "create_plugin", None)
    if not callable(factory):
        raise _StageError(
            "factory",
            "plugin.py must define a module-level create_plugin() that returns the plugin",
        )
    try:
        instance = factory()
    except Exception as exc:
        raise _StageError("factory", f"create_plugin() raised {_describe(exc)}", exc) from None
    if not isinstance(instance, Plugin):
        raise _StageError(
            "factory",
            f"create_plugin() returned {type(instance).__name__}; return an instance of a "
            "plughost_sdk.Plugin subclass",
        )
    return instance


def _handlers(spec: PluginSpec, instance: Plugin) -> dict[str, Handler]:
    return {
        declaration.name: _handler(declaration, getattr(instance, declaration.handler_name))
        for declaration in type(instance).tool_declarations()
    }


def _handler(
    declaration: ToolDeclaration | ResourceDeclaration | PromptDeclaration,
    function: Callable[..., Any],
    adapt_result: Callable[[Any], Any] | None = None,
) -> Handler:
    is_async, accepts_any, accepted = call_shape(function)
    return Handler(declaration, function, is_async, accepts_any, accepted, adapt_result)


def _content_handlers(instance: Plugin) -> tuple[dict[str, Handler], dict[str, Handler]]:
    """The plugin's ``@Resource`` handlers by URI (or template) and ``@Prompt`` ones by name."""
    kind = type(instance)
    resources = {
        d.uri: _handler(d, getattr(instance, d.handler_name)) for d in kind.resource_declarations()
    }
    prompts = {
        d.name: _handler(d, getattr(instance, d.handler_name)) for d in kind.prompt_declarations()
    }
    return resources, prompts


async def unload_plugin(plugin: LoadedPlugin, timeout: float) -> str | None:
    """Run ``on_unload`` under ``timeout``; return a problem description, or None."""
    try:
        async with asyncio.timeout(timeout):
            await plugin.instance.on_unload()
    except TimeoutError:
        return f"on_unload did not finish within {timeout:g} s"
    except Exception as exc:
        return f"on_unload raised {_describe(exc)}"
    finally:
        sys.modules.pop(plugin.module.__name__, None)
        maibot_imports.unregister_package(plugin.module.__name__)
    return None


def _undeclared(exc: BaseException) -> str:
    """Advice for a module that is not there: most often a package the plugin did not declare."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name or "MaiBot" in str(exc):
        return ""
    top = exc.name.split(".")[0]
    return (
        f"; if {top} comes from a package on PyPI, declare that package in the plugin's "
        "requirements.txt (or pyproject.toml, or the manifest's python_package dependencies) "
        "and the host installs it for this plugin"
    )


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _failure(spec: PluginSpec, stage: str, reason: str, exc: BaseException | None) -> LoadFailure:
    file, line, text = "", 0, ""
    if exc is not None:
        text = "".join(traceback.format_exception(exc))
        file, line = _plugin_frame(spec.path, exc)
        refused = describe_limit_error(exc, spec.plugin_id)  # the sandbox's, with the grant
        if refused is not None:
            reason = f"{reason}; {refused}"
    if not file:
        file = str(spec.path / "plugin.py")
    return LoadFailure(
        plugin_id=spec.plugin_id,
        path=str(spec.path),
        stage=stage,
        reason=reason,
        file=file,
        line=line,
        traceback=text,
    )


def _plugin_frame(root: Path, exc: BaseException) -> tuple[str, int]:
    """The deepest traceback frame inside the plugin's folder (file, line)."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return exc.filename, exc.lineno or 0
    found: tuple[str, int] = ("", 0)
    root_text = str(root.resolve())
    for frame in traceback.extract_tb(exc.__traceback__):
        if str(Path(frame.filename).resolve()).startswith(root_text):
            found = (frame.filename, frame.lineno or 0)
    return found
