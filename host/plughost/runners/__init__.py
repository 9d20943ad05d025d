"""Runner processes and the host's end of their sockets.

Lives here: spawning (``spawn``, ``child_process``, ``fork_server``, and ``early``,
which starts the fork server and the sandbox probe before a command's imports), the
sandbox (what the kernel offers, ``sandbox_probe``; what each runner gets,
``sandbox``), CurveZMQ keys of the runners it starts over ``tcp://``
(``curve``), the ZeroMQ channel and its request/reply bookkeeping (``channel``), the
restart policy (``restart``), the ``RunnerSupervisor`` (``supervisor``: spawn, ready
handshake, restarts and the call path; ``runner_messages``: what it and its runner say
besides calls; ``shutdown``: how a runner process ends; ``runner_state``: the
``RunnerState`` and the state those three share) and its
``watchdog`` (heartbeats, stuck calls, ``memory`` and ``cpu`` measured from the
kernel over the runner's processes, found by ``proc_tree``), what
the host accepts from a runner (``reports``, ``output``, ``config_subscriptions``) and
the host's handlers for what a runner asks of it (``capabilities``, ``tool_calls``),
and the host's books of the runners it started (``fleet``: which plugins share one,
replicas, reload candidates, what their reports change in the registry). Runners on
other machines are :mod:`plughost.remote`, which builds on this package.

May import: ``plughost.plugins``, ``plughost.tools`` and the leaf modules. Never the
runner distribution itself: runners are started by module name.
"""
