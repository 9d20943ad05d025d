"""What the commands share: the ``--plugins``, ``--config`` and ``--json`` options, the exit codes.

Several command modules register on the ``plughost`` group (``main``, ``one_shot_commands``);
each option is written once here so its flag and help text read the same everywhere.
Only click is imported: every module that imports this one is loaded by ``plughost --help``.
"""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["EXIT_FAILED", "EXIT_USAGE", "config_option", "json_option", "plugins_option"]

EXIT_FAILED = 1
EXIT_USAGE = 2

plugins_option = click.option(
    "--plugins",
    "plugin_dirs",
    multiple=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="A folder of plugin folders, or one plugin folder. Repeat for several.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
config_option = click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A TOML configuration file (the one serve reads); flags win over it.",
)
