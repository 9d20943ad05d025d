"""plughost runner: the child process that loads plugins and serves their tools.

Start it with ``python -m plughost_runner``; the host does this for you. The
package exposes no API to plugin authors, who import only ``plughost_sdk``.
"""

from plughost_runner.loader import LoadedPlugin, LoadFailure, PluginSpec
from plughost_runner.service import RunnerService

__version__ = "0.1.0"

__all__ = ["LoadFailure", "LoadedPlugin", "PluginSpec", "RunnerService", "__version__"]
