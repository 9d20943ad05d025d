"""Runners on other machines: ``plughost-runner --connect`` joining a host over CurveZMQ.

Lives here: the socket the host listens on and its sessions (``listener``), a session
as a member of its plugins' pools (``member``), what such a runner asks of the host
(``requests``: ready, capability calls, plugins offered, reloaded or removed there),
the credentials it joins with and their allow-lists (``keys``), and what a session
changes in the rest of the host (``registration``: its pools, tools, problems and
status rows). The runners the host starts itself are :mod:`plughost.runners`.

May import: ``plughost.runners``, ``plughost.plugins``, ``plughost.tools`` and the
leaf modules. Never the runner distribution itself.
"""
