"""Remote mode: a runner on another machine that joins a host over TCP (``plughost-runner``).

It loads and serves plugins as a spawned runner does (it is a
:class:`~plughost_runner.service.RunnerService`), and adds what a runner the host
did not start needs::

    cli.py       the ``plughost-runner`` command: its credential, its options, main()
    offers.py    the plugin folders under ``--plugins``, read from disk as offers
    service.py   RemoteService: hot reload of those folders, rejoining a new host
    leaving.py   draining the calls in flight on SIGTERM or SIGINT, then exiting 0
    polling.py   watching a folder by polling, where no change events arrive

May import: ``process``, ``maibot``, ``plugins``, ``link`` and ``plughost_runner.service``;
nothing in the runner imports this package.
"""

from __future__ import annotations

from plughost_runner.remote.cli import main

__all__ = ["main"]
