"""The runner's link to its host: the socket, and what goes over it besides a tool call.

``transport`` is the DEALER socket; ``lifecycle`` the session on it (hello,
heartbeats, logs, health, shutdown); ``pulse`` sends heartbeats from a thread
while a plugin blocks the event loop; ``bridge`` is a plugin's way to the host
(capability calls, progress); ``plugin_requests`` answers the host's requests
besides calls (resources, prompts, configuration); ``replies`` is how a request
handler answers with a wire error. ``plughost_runner.service`` (one floor up)
assembles them into :class:`~plughost_runner.service.RunnerService`.

May import: ``process``, ``maibot`` and ``plugins``.
"""
