"""The runner process itself, before and around any plugin.

What a runner does to its own process: its credentials read from a pipe and kept
out of reach (``credentials``), a lifeline to its parent (``lifeline``), the
operating-system limits it applies to itself (``limits``), its heap kept warm
between calls (``heap``), plugins' logs and stray output captured for the host
(``capture``), and a task's first step run at once (``eager``).

May import: nothing else of the runner (only ``plughost_sdk`` and the standard
library), so every other part can use it.
"""
