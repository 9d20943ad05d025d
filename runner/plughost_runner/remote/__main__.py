"""``python -m plughost_runner.remote``: the same as the ``plughost-runner`` command."""

import sys

from plughost_runner.remote.cli import main

sys.exit(main())
