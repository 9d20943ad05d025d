"""Imported by a sandboxed Python MCP server at start: its network goes through the gate.

``plughost_runner.sandbox.launch`` puts this folder first on ``PYTHONPATH``
and the gate's path in ``PLUGHOST_EGRESS``. The server's own environment has
no plughost installed, so the socket layer is loaded from its file, which
needs nothing but the standard library. Another ``sitecustomize`` the server
ships is still run afterwards.
"""

import contextlib
import importlib.util
import os
import sys

_gate = os.environ.pop("PLUGHOST_EGRESS", "")
if _gate:
    _here = os.path.dirname(os.path.abspath(__file__))
    _spec = importlib.util.spec_from_file_location(
        "_plughost_egress", os.path.join(os.path.dirname(_here), "egress.py")
    )
    if _spec is not None and _spec.loader is not None:
        _egress = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(_egress)
        _proxy = os.environ.get("PLUGHOST_EGRESS_PROXY", "")
        _host, _, _port = _proxy.rpartition(":")
        _egress.install(_gate, proxied=(_host, int(_port)) if _port.isdigit() else None)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p) != _here]
    sys.modules.pop("sitecustomize", None)
    with contextlib.suppress(ImportError):
        import sitecustomize  # type: ignore[import-not-found]  # noqa: F401  (the server's own)
