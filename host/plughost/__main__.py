"""``python -m plughost``: the same as the ``plughost`` command."""

from plughost.cli.main import main

main()
