"""``python -m plughost_runner.sandbox``: print which protections this kernel grants."""

import sys

from plughost_runner.sandbox.probe import main

sys.exit(main())
