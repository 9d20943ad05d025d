"""The Python packages plugins declare, each set installed into an environment of its own.

Lives here: reading what a plugin declares (``requirements``), the runner's own
packages a plugin may not replace (``runner_packages``), one uv run
(``installer``) and the store of environments, shared by requirement set and
installed before a plugin starts (``environments``).

May import: the leaf modules and ``plughost.plugins`` (a plugin's folder and
manifest). Never ``plughost.runners``: the environment is handed to whoever
starts the runner, as part of the plugin's source.
"""

from plughost.dependencies.environments import PluginEnvironments
from plughost.dependencies.requirements import DependencyError, plugin_requirements

__all__ = ["DependencyError", "PluginEnvironments", "plugin_requirements"]
