"""Open the configured graph backend, and open it checked to answer: the one place every command,
job and service opens the graph from its settings."""

from __future__ import annotations

from watershed.graph.errors import GraphUnavailableError, WatershedError, first_line
from watershed.graph.extras import require_extra
from watershed.graph.neo4j_server import redacted
from watershed.graph.settings import GraphSettings
from watershed.graph.store import GraphStore


class UnknownBackendError(WatershedError, ValueError):
    pass


class UnreachableGraphError(GraphUnavailableError):
    """The configured graph did not answer when opened. `server` names the backend and where its
    settings point (`neo4j graph on bolt://...`), so the message says which setting to check."""

    def __str__(self) -> str:
        return f"cannot reach the {self.server} ({self.reason or 'no answer'})"


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


def where(settings: GraphSettings) -> str:
    """Where the settings point the graph: the Neo4j URI (never its user:password@), or FalkorDB's
    host:port."""
    if settings.backend == "neo4j":
        return redacted(settings.neo4j_uri)
    return f"{settings.falkordb_host}:{settings.falkordb_port}"


def open_answering(settings: GraphSettings | None = None, *, schema: bool = False) -> GraphStore:
    """The configured graph, checked to answer (and with `schema`, its indexes and constraints
    made): UnreachableGraphError naming the backend and where when it does not answer, any other
    WatershedError (an unknown backend) as raised."""
    settings = settings or GraphSettings()
    store = None
    try:
        store = open_store(settings)
        store.ping()
        if schema:
            store.ensure_schema()
        return store
    except WatershedError as exc:
        if store is not None:
            store.close()
        if not isinstance(exc, GraphUnavailableError):
            raise
        # the store names the server; this names the setting that pointed there
        raise UnreachableGraphError(f"{settings.backend} graph on {where(settings)}", exc.reason) from None
    except Exception as exc:
        # a driver's own error (a refused connection, a bad URI) is the same news: no graph there
        if store is not None:
            store.close()
        raise UnreachableGraphError(
            f"{settings.backend} graph on {where(settings)}", first_line(exc) or type(exc).__name__
        ) from None
