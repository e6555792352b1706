"""Open the configured graph backend."""

from __future__ import annotations

from graph.settings import GraphSettings
from graph.store import GraphStore


class UnknownBackendError(ValueError):
    pass


def open_store(settings: GraphSettings | None = None) -> GraphStore:
    """The `GraphStore` named by `settings.backend` (`falkordb`, the default, or `neo4j`)."""
    settings = settings or GraphSettings()
    if settings.backend == "falkordb":
        from graph.falkordb_store import FalkorDBStore

        return FalkorDBStore.from_settings(settings)
    if settings.backend == "neo4j":
        from graph.neo4j_store import Neo4jStore

        return Neo4jStore.from_settings(settings)
    raise UnknownBackendError(f"WATERSHED_BACKEND={settings.backend!r}: expected 'falkordb' or 'neo4j'")
