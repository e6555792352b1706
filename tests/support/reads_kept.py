"""A graph wrapper that keeps every read a use case makes, so a test can ask FalkorDB for the plan
of exactly those queries.

    from tests.support.reads_kept import ReadsKept
"""

from __future__ import annotations


class ReadsKept:
    """The graph as search_nodes reads it, keeping each read (the reads still reach the graph)."""

    def __init__(self, graph) -> None:
        self.graph = graph
        self.reads: list[tuple[str, dict]] = []

    def read(self, query: str, params: dict | None = None):
        self.reads.append((query, dict(params or {})))
        return self.graph.read(query, params)

    def description_matches(self, *args):
        return self.graph.description_matches(*args)

    def id_word_matches(self, *args):
        return self.graph.id_word_matches(*args)
