"""A graph wrapper that keeps every read a use case makes, so a test can ask FalkorDB for the plan
of exactly those queries.

    from tests.support.reads_kept import ReadsKept
"""

from __future__ import annotations


class ReadsKept:
    """The graph as a use case reads it, keeping each read (the reads and writes still reach the graph)."""

    def __init__(self, graph) -> None:
        self.graph = graph
        self.reads: list[tuple[str, dict]] = []

    def read(self, query: str, params: dict | None = None):
        self.reads.append((query, dict(params or {})))
        return self.graph.read(query, params)

    def __getattr__(self, name: str):
        # everything else (the index lookups, the writes) reaches the graph as it is
        return getattr(self.graph, name)
