"""Open the configured graph backend."""

from __future__ import annotations

from watershed.graph.errors import WatershedError
from watershed.graph.extras import require_extra
from watershed.graph.settings import GraphSettings
from watershed.graph.store import GraphStore


class UnknownBackendError(WatershedError, ValueError):
    pass


def open_store(settings: GraphSettings | None = None) -> GraphStore:
    """The `GraphStore` named by `settings.backend` (`falkordb`, the default, or `neo4j`)."""
    settings = settings or GraphSettings()
    if settings.backend == "falkordb":
        from watershed.graph.falkordb_store import FalkorDBStore

        return FalkorDBStore.from_settings(settings)
    if settings.backend == "neo4j":
        require_extra("neo4j", "neo4j", purpose="WATERSHED_BACKEND=neo4j")
        from watershed.graph.neo4j_store import Neo4jStore

        return Neo4jStore.from_settings(settings)
    raise UnknownBackendError(f"WATERSHED_BACKEND={settings.backend!r}: expected 'falkordb' or 'neo4j'")
