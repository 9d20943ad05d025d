"""The public names of plughost_runner: pinned, so a change to them is a deliberate one."""

from __future__ import annotations

import plughost_runner

PUBLIC_NAMES = ["LoadFailure", "LoadedPlugin", "PluginSpec", "RunnerService", "__version__"]


def test_plughost_runner_exports_exactly_the_pinned_names() -> None:
    assert sorted(plughost_runner.__all__) == PUBLIC_NAMES


def test_every_exported_name_resolves() -> None:
    missing = [name for name in plughost_runner.__all__ if not hasattr(plughost_runner, name)]
    assert missing == []
