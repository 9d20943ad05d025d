"""Import cycles in a graph of modules, for the layout tests of the host and the runner."""

from __future__ import annotations

from collections.abc import Mapping, Set


def import_cycles(graph: Mapping[str, Set[str]]) -> list[str]:
    """Every cycle through the graph, as ``a -> b -> a`` (each module imports the next)."""
    cycles = []
    for start in graph:
        stack, seen = [(start, (start,))], set()
        while stack:
            node, trail = stack.pop()
            for nxt in graph.get(node, ()):
                if nxt == start and len(trail) > 1:
                    cycles.append(" -> ".join((*trail, nxt)))
                elif nxt not in seen and nxt in graph and nxt != node:
                    seen.add(nxt)
                    stack.append((nxt, (*trail, nxt)))
    return sorted(set(cycles))
