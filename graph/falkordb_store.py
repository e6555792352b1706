"""The embedded default backend: FalkorDB through its native client (Redis protocol).

Never FalkorDB's Bolt port: it crashes the server on messages over about 8 KB.
FalkorDB has no multi-statement transactions; each statement of a load is
atomic, and a load is idempotent (a half-applied load is finished by running
it again, because the task's version is written with its edges and the old
edges are deleted first).
"""

from __future__ import annotations

from typing import Any

from falkordb import FalkorDB
from redis.exceptions import ResponseError

from graph import queries
from graph.settings import GraphSettings
from graph.store import GraphStore

INDEXES = [
    "CREATE INDEX FOR (n:Table) ON (n.id)",
    "CREATE INDEX FOR (n:Column) ON (n.id)",
    "CREATE INDEX FOR (n:Task) ON (n.id)",
    "CREATE INDEX FOR (n:HarvestRun) ON (n.id)",
]


class FalkorDBStore(GraphStore):
    def __init__(self, host: str, port: int, graph: str = "watershed", batch_size: int = 5000) -> None:
        self.client = FalkorDB(host=host, port=port)
        self.graph = self.client.select_graph(graph)
        self.graph_name = graph
        self.batch_size = batch_size

    @classmethod
    def from_settings(cls, settings: GraphSettings | None = None) -> FalkorDBStore:
        settings = settings or GraphSettings()
        return cls(
            settings.falkordb_host, settings.falkordb_port, settings.graph_name, settings.load_batch_size
        )

    def _run(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        return self.graph.query(query, params or {}).result_set

    def _write(self, statements: list[tuple[str, dict[str, Any]]]) -> None:
        for query, params in statements:
            self.graph.query(query, params)

    def _lineage_rows(self, label: str, direction: str, depth: int, node_id: str) -> list[tuple]:
        rows = self._run(queries.lineage_subgraph(label, direction, depth, packed=True), {"id": node_id})
        out = []
        for packed, functions in rows:
            source, target, task, kind, key = packed.split("\t", 4)
            out.append((source, target, task or None, kind or None, key or None, functions))
        return out

    def ensure_schema(self) -> None:
        for statement in INDEXES:
            try:
                self.graph.query(statement)
            except ResponseError as exc:
                if "already indexed" not in str(exc):
                    raise

    def clear(self) -> None:
        try:
            self.graph.delete()
        except ResponseError as exc:
            if "empty key" not in str(exc).lower() and "invalid graph" not in str(exc).lower():
                raise

    def close(self) -> None:
        self.client.connection.close()
