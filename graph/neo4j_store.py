"""The production backend: Neo4j 5 through the official `neo4j` driver (Bolt).

The data queries are the shared ones in `graph.queries`; only the schema
statements are Neo4j's own. A load runs as one managed write transaction
(`execute_write`), which the driver retries on transient errors (leader
changes, deadlocks), so a load is all-or-nothing and safe to retry.

A read is one auto-commit query on a session the calling thread keeps (RUN and PULL in one round
trip; a managed read transaction adds BEGIN and COMMIT, and a new session per read its own Python
work): a page, a lineage hop or a propagation batch costs one round trip, as on FalkorDB. Sessions
are not thread-safe, and the API calls one store from its worker threads: each thread has its own.
"""

from __future__ import annotations

import contextlib
import functools
import re
import secrets
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from watershed.graph import neo4j_server, queries
from watershed.graph.errors import GraphUnavailableError, first_line
from watershed.graph.model import Level, LineageDirection, LineageEdge, LineageNode, LineageView
from watershed.graph.settings import GraphSettings
from watershed.graph.store import DATA_STAMP, GraphStore, description_terms

CONSTRAINTS = [
    "CREATE CONSTRAINT watershed_table_id IF NOT EXISTS FOR (n:Table) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT watershed_column_id IF NOT EXISTS FOR (n:Column) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT watershed_task_id IF NOT EXISTS FOR (n:Task) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT watershed_run_id IF NOT EXISTS FOR (n:HarvestRun) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT watershed_tag_id IF NOT EXISTS FOR (n:Tag) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT watershed_fence_id IF NOT EXISTS FOR (n:PropagationFence) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT watershed_propagation_run_id IF NOT EXISTS FOR (n:PropagationRun) REQUIRE n.id IS UNIQUE",
    "CREATE INDEX watershed_flows_task IF NOT EXISTS FOR ()-[r:FLOWS_TO]-() ON (r.task)",
    # accounts and audit of the steward service (api/service/accounts, api/service/audit.py); the same lookups as
    # graph.falkordb_store.INDEXES, unique where the service creates one node per key
    "CREATE CONSTRAINT watershed_user_name IF NOT EXISTS FOR (n:User) REQUIRE n.name IS UNIQUE",
    "CREATE CONSTRAINT watershed_api_token_id IF NOT EXISTS FOR (n:ApiToken) REQUIRE n.id IS UNIQUE",
    "CREATE INDEX watershed_api_token_user IF NOT EXISTS FOR (n:ApiToken) ON (n.user)",
    "CREATE CONSTRAINT watershed_session_id_hash IF NOT EXISTS FOR (n:Session) REQUIRE n.id_hash IS UNIQUE",
    "CREATE INDEX watershed_session_user IF NOT EXISTS FOR (n:Session) ON (n.user)",
    "CREATE INDEX watershed_session_token IF NOT EXISTS FOR (n:Session) ON (n.token)",
    "CREATE CONSTRAINT watershed_audit_id IF NOT EXISTS FOR (n:AuditEntry) REQUIRE n.id IS UNIQUE",
    "CREATE INDEX watershed_audit_target IF NOT EXISTS FOR (n:AuditEntry) ON (n.target)",
    "CREATE CONSTRAINT watershed_data_role_name IF NOT EXISTS FOR (n:DataRole) REQUIRE n.name IS UNIQUE",
    "CREATE INDEX watershed_data_role_member_name IF NOT EXISTS FOR (n:DataRoleMember) ON (n.name)",
    "CREATE INDEX watershed_data_role_member_role IF NOT EXISTS FOR (n:DataRoleMember) ON (n.role)",
    "CREATE INDEX watershed_group_member_user IF NOT EXISTS FOR (n:GroupMember) ON (n.user)",
    "CREATE INDEX watershed_group_member_group IF NOT EXISTS FOR (n:GroupMember) ON (n.group)",
    "CREATE CONSTRAINT watershed_data_grant_id IF NOT EXISTS FOR (n:DataGrant) REQUIRE n.id IS UNIQUE",
    "CREATE INDEX watershed_data_grant_role IF NOT EXISTS FOR (n:DataGrant) ON (n.role)",
    # plain indexes, not uniqueness: a database whose records were MERGEd before these existed
    # may hold a duplicate, and a constraint would then stop the store from opening
    "CREATE INDEX watershed_table_protection_table IF NOT EXISTS FOR (n:TableProtection) ON (n.table)",
    "CREATE INDEX watershed_protected_file_path IF NOT EXISTS FOR (n:ProtectedFile) ON (n.path)",
    "CREATE INDEX watershed_protected_file_table IF NOT EXISTS FOR (n:ProtectedFile) ON (n.table)",
    "CREATE INDEX watershed_protection_run_id IF NOT EXISTS FOR (n:ProtectionRun) ON (n.id)",
    # discovery (api/service/discovery.py): a table's last scan and a column's proposal, one per id
    "CREATE CONSTRAINT watershed_discovery_scan_id IF NOT EXISTS FOR (n:DiscoveryScan) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT watershed_discovery_proposal_id IF NOT EXISTS FOR (n:DiscoveryProposal) REQUIRE n.id IS UNIQUE",
    # a derived column's leak or over-tag flag, one per column id; a table's scan replaces its table's
    "CREATE CONSTRAINT watershed_discovery_flag_id IF NOT EXISTS FOR (n:DiscoveryFlag) REQUIRE n.id IS UNIQUE",
    "CREATE INDEX watershed_discovery_flag_table IF NOT EXISTS FOR (n:DiscoveryFlag) ON (n.table)",
    # what an incremental propagation starts from (propagation.queries CHANGED_SINCE,
    # COLUMNS_CREATED_SINCE: `WHERE n.<time> >= $since`): range seeks instead of a scan of every
    # Column and Table
    "CREATE INDEX watershed_column_created_at IF NOT EXISTS FOR (n:Column) ON (n.created_at)",
    "CREATE INDEX watershed_column_own_changed_at IF NOT EXISTS FOR (n:Column) ON (n.own_changed_at)",
    "CREATE INDEX watershed_table_own_changed_at IF NOT EXISTS FOR (n:Table) ON (n.own_changed_at)",
    "CREATE INDEX watershed_table_lineage_changed_at IF NOT EXISTS FOR (n:Table) ON (n.lineage_changed_at)",
    # and its descriptions-and-owners pass (propagation.metadata CHANGED_COLUMNS, METADATA_CHANGED_SINCE)
    "CREATE INDEX watershed_column_metadata_changed_at IF NOT EXISTS FOR (n:Column) ON (n.metadata_changed_at)",
    "CREATE INDEX watershed_table_metadata_changed_at IF NOT EXISTS FOR (n:Table) ON (n.metadata_changed_at)",
    # the tables whose columns' TTL advice is due (ttl_advisor/batches.py)
    "CREATE INDEX watershed_table_uses_changed_at IF NOT EXISTS FOR (n:Table) ON (n.uses_changed_at)",
    # the columns whose tags changed since the last plan, each table's kept plan (orc_crypto/protect/plan.py)
    "CREATE INDEX watershed_column_tags_changed_at IF NOT EXISTS FOR (n:Column) ON (n.tags_changed_at)",
    "CREATE INDEX watershed_planned_table IF NOT EXISTS FOR (n:PlannedTable) ON (n.table)",
    # change stamps (graph.kept): one node per name
    "CREATE CONSTRAINT watershed_stamp_name IF NOT EXISTS FOR (n:WatershedStamp) REQUIRE n.name IS UNIQUE",
]
# Search's description stage (api/service/search.py): the shown description's words, kept in the
# write that sets it; graph.falkordb_store.FULLTEXT_INDEXES. No stop words ("the", "id" are
# searched for). Then waited for: on a database that already holds nodes the index fills in the
# background, and a query before it is online fails.
FULLTEXT_INDEXES = [
    f"CREATE FULLTEXT INDEX watershed_{label.lower()}_description IF NOT EXISTS FOR (n:{label}) "
    "ON EACH [n.description] OPTIONS {indexConfig: {`fulltext.analyzer`: 'standard-no-stop-words'}}"
    for label in ("Table", "Column")
] + [
    # search's id-word stage: `id_words` (graph.queries.id_words), set in the write creating the node
    f"CREATE FULLTEXT INDEX watershed_{label.lower()}_id_words IF NOT EXISTS FOR (n:{label}) "
    "ON EACH [n.id_words] OPTIONS {indexConfig: {`fulltext.analyzer`: 'standard-no-stop-words'}}"
    for label in ("Table", "Column")
]
# Nodes written before `id_words` existed get it once, in transactions of a batch each; a stamp node
# says it was done (`clear` deletes it with the graph, whose later writes set the property).
BACKFILL_BATCH = 10_000
_BACKFILLED = "#backfilled:id_words"
_STAMPED = "MATCH (s:WatershedStamp {name: $stamp_name}) RETURN s.name"
_ID_WORDS_BACKFILL = {
    label: f"MATCH (n:{label}) WHERE n.id_words IS NULL "
    f"CALL {{ WITH n SET n.id_words = {queries.id_words('n.id')} }} IN TRANSACTIONS OF {BACKFILL_BATCH} ROWS"
    for label in ("Table", "Column")
}
AWAIT_INDEXES = "CALL db.awaitIndexes(600)"
# Lucene: `w*` is a prefix; every term must match
_DESCRIBED = "CALL db.index.fulltext.queryNodes($index, $query) YIELD node RETURN node.id SKIP $skip LIMIT $n"
# Lucene's standard tokenizer makes each Han or Hiragana character a word of its own
_IDEOGRAPH = re.compile(r"[\u3040-\u309f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _lucene_prefix(term: str) -> str:
    """The part of `term` (letters, digits, `_`) that starts one of Lucene's words: up to its first
    ideograph, or that ideograph when it comes first."""
    ideograph = _IDEOGRAPH.search(term)
    if ideograph is None:
        return term
    return term[: ideograph.start()] or ideograph.group()


# Change stamps (graph.kept) are WatershedStamp nodes, one per name, with a random value; every
# stamp includes the epoch's, which `clear` moves: a reader never keeps values across a clear.
STAMP_LABEL = "WatershedStamp"
#: tries of an auto-commit statement (a read, a queued record) on an error the driver calls
#: retryable (a deadlock, a leader change, a connection the server closed), the n-th after
#: RETRY_DELAY * 2**(n-1) seconds; a managed transaction's retries, kept short: a server that is
#: down is reported in a second instead of the managed API's 30
AUTO_ATTEMPTS = 3
RETRY_DELAY = 0.2
EPOCH = "#epoch"
_STAMP_NOW = (
    "OPTIONAL MATCH (e:WatershedStamp {name: '#epoch'}) OPTIONAL MATCH (s:WatershedStamp {name: $stamp_name}) "
    "WITH coalesce(e.value, '') + '/' + coalesce(s.value, '') AS now "
)
_STAMP = _STAMP_NOW + "RETURN now"
_RESTAMP = "MERGE (s:WatershedStamp {name: $stamp_name}) SET s.value = $stamp_value"


def _queued_under_stamp(statement: str) -> str:
    """`statement` (which writes each row of $rows) in one statement with the stamp check: it
    writes only while the stamp named $stamp_name is $stamp (or $stamp is null), and answers the
    stamp now. One round trip for a gateway's warm check, as FalkorDB's server-side script."""
    return (
        _STAMP_NOW
        + "CALL { WITH now WITH now WHERE $stamp IS NULL OR now = $stamp "
        + statement
        + " } RETURN now"
    )


#: one hop of GraphStore.bounded_lineage (graph.store `_HOP` + `_HOP_RETURN`, the same pattern,
#: filter and cap, so the same rows in the same order), as a subquery answering the hop's rows
_KINDS = "WHERE $kinds IS NULL OR r.kind IN $kinds "
_LINEAGE_HOP = {
    ("Column", "upstream"): "MATCH (n:Column {id: id})<-[r:FLOWS_TO]-(o) " + _KINDS,
    ("Column", "downstream"): "MATCH (n:Column {id: id})-[r:FLOWS_TO]->(o) " + _KINDS,
    ("Table", "upstream"): "MATCH (n:Table {id: id})<-[r:FLOWS_TO]-(o) ",
    ("Table", "downstream"): "MATCH (n:Table {id: id})-[r:FLOWS_TO]->(o) ",
}
_LINEAGE_ROW = {
    "Column": "[n.id, o.id, r.task, r.kind, r.functions, o.tags]",
    "Table": "[n.id, o.id, r.task, null, null, o.tags]",
}


#: the deepest bounded lineage answered in one statement (GET /lineage allows up to 10 hops)
LINEAGE_STATEMENT_DEPTH = 10


@functools.cache
def _lineage_statement(label: str, walks: tuple[str, ...], depth: int) -> str:
    """A whole bounded lineage walk as one statement: the root's tags and every hop's rows, walk
    by walk (`depth` hops each). Each hop's frontier is computed as `GraphStore._lineage_hop`
    computes it (the far nodes not yet seen, in row order, while fewer than $limit are), so the
    rows are those the hop-by-hop walk reads, one round trip instead of one per hop."""
    parts = [f"MATCH (root:{label} {{id: $id}}) WITH root.tags AS root_tags, [$id] AS seen, [] AS hops "]
    for walk in walks:
        parts.append("WITH root_tags, seen, hops, [$id] AS frontier ")
        for _ in range(depth):
            parts.append(
                "CALL { WITH frontier UNWIND frontier AS id "
                + _LINEAGE_HOP[(label, walk)]
                + f"WITH n, r, o LIMIT $cap RETURN collect({_LINEAGE_ROW[label]}) AS rows }} "
                # a full `seen` takes nothing more; checked first, so a long hop stops comparing
                "WITH root_tags, hops + [rows] AS hops, reduce(a = {seen: seen, next: []}, row IN rows | "
                "CASE WHEN size(a.seen) >= $limit THEN a WHEN row[1] IN a.seen THEN a "
                "ELSE {seen: a.seen + row[1], next: a.next + row[1]} END) AS step "
                "WITH root_tags, hops, step.seen AS seen, step.next AS frontier "
            )
    parts.append("RETURN root_tags, hops")
    return "".join(parts)


def _reaching_server(method):
    """A store method whose unreachable server (or lost session) is a GraphUnavailableError."""

    @functools.wraps(method)
    def call(self: Neo4jStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            # imported here: the driver is an optional extra, present whenever a store is
            from neo4j.exceptions import ServiceUnavailable, SessionExpired

            if isinstance(exc, (ServiceUnavailable, SessionExpired)):
                raise GraphUnavailableError(self.where, first_line(exc)) from exc
            raise

    return call


def _rows(tx, query: str, params: dict[str, Any]) -> list[list[Any]]:
    return [list(record.values()) for record in tx.run(query, params)]


def _move_data_stamp(tx) -> None:
    """The data stamp's move as the last statement of the write's own transaction: it moves exactly
    when the write commits (a write that failed or rolled back changed nothing kept values could
    hide). Last, so the stamp node's lock is held only while the transaction commits, and a writer
    holding it waits for no other lock: writers queue on it for their commits alone, never deadlock."""
    tx.run(_RESTAMP, {"stamp_name": DATA_STAMP, "stamp_value": secrets.token_hex(8)}).consume()


class _KeptSession:
    """A session one thread keeps, closed when the thread ends (its locals go), when the store's
    driver is replaced, or when the store closes."""

    def __init__(self, driver, access_mode: str, database: str) -> None:
        self.driver = driver
        # entered as a context manager: leaving it is how every session-like object closes
        self.session = driver.session(database=database, default_access_mode=access_mode)
        self._exit = self.session.__exit__

    def close(self) -> None:
        exit_, self._exit = self._exit, None
        if exit_ is not None:
            exit_(None, None, None)

    def __del__(self) -> None:
        self.close()


class Neo4jStore(GraphStore):
    def __init__(self, driver, database: str = "neo4j", batch_size: int = 5000, where: str = "Neo4j") -> None:
        self.driver = driver
        self.database = database
        self.batch_size = batch_size
        #: where the graph is, as errors name it (no credential)
        self.where = f"{where}, database {database}"
        #: each thread's sessions by access mode, and every live one (for `close`)
        self._sessions = threading.local()
        self._kept: weakref.WeakSet[_KeptSession] = weakref.WeakSet()
        self._kept_lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: GraphSettings | None = None) -> Neo4jStore:
        from neo4j import GraphDatabase

        settings = settings or GraphSettings()
        # the settings' password, WATERSHED_NEO4J_PASSWORD_FILE's, or the local Neo4j's own
        secret = neo4j_server.password(settings)
        # no notifications: the product reads optional properties that most nodes lack, and the
        # driver logs each such read's "property does not exist" warning to stderr (the demo, the CLI)
        driver = GraphDatabase.driver(
            settings.neo4j_uri, auth=(settings.neo4j_user, secret), notifications_min_severity="OFF"
        )
        # the address only: a URI may carry user:password@
        address = urlsplit(settings.neo4j_uri)
        where = f"Neo4j at {address.scheme}://{address.hostname}:{address.port or 7687}"
        return cls(driver, settings.neo4j_database, settings.load_batch_size, where)

    @_reaching_server
    def ping(self) -> None:
        # A managed read retries a server that is down for 30 s; this answers at once.
        self.driver.verify_connectivity()

    def _session(self, access_mode: str):
        """This thread's session of `access_mode` on the store's driver."""
        kept = getattr(self._sessions, access_mode, None)
        if kept is None or kept.driver is not self.driver:
            kept = _KeptSession(self.driver, access_mode, self.database)
            setattr(self._sessions, access_mode, kept)
            with self._kept_lock:
                self._kept.add(kept)
        return kept.session

    def _auto(self, access_mode: str, query: str, params: dict[str, Any]) -> list[list[Any]]:
        """`query` as one auto-commit statement on this thread's session; retried (on a new
        session) on a retryable error, so only statements safe to repeat come here."""
        from neo4j.exceptions import DriverError, Neo4jError

        for attempt in range(AUTO_ATTEMPTS):
            try:
                return [list(record.values()) for record in self._session(access_mode).run(query, params)]
            except (DriverError, Neo4jError) as exc:
                if attempt == AUTO_ATTEMPTS - 1 or not exc.is_retryable():
                    raise
                # the session's connection may be the broken one; a new session takes another
                kept = getattr(self._sessions, access_mode)
                setattr(self._sessions, access_mode, None)
                with contextlib.suppress(Exception):
                    kept.close()
                time.sleep(RETRY_DELAY * 2**attempt)
        raise AssertionError("unreachable")

    @_reaching_server
    def read(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        return self._auto("READ", query, params or {})

    @_reaching_server
    def write_all(self, statements: list[tuple[str, dict[str, Any]]]) -> None:
        def write(tx):
            for query, params in statements:
                tx.run(query, params).consume()
            _move_data_stamp(tx)

        self._session("WRITE").execute_write(write)

    @_reaching_server
    def execute(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        def write(tx):
            rows = _rows(tx, query, params or {})
            _move_data_stamp(tx)
            return rows

        return self._session("WRITE").execute_write(write)

    @_reaching_server
    def record(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        with self.driver.session(database=self.database) as session:
            return session.execute_write(_rows, query, params or {})

    @_reaching_server
    def queue_record(
        self,
        statement: str,
        row: dict[str, Any],
        *,
        stamp_name: str = DATA_STAMP,
        stamp: str | None = None,
    ) -> str | None:
        # Neo4j has no queue beside the graph: the record is written at once, in the one
        # statement that checks the stamp. An auto-commit transaction sends RUN and PULL
        # together, one round trip (a managed one adds BEGIN and COMMIT); a transient error is
        # retried by `_auto` instead, which the idempotent statement (a MERGE on an id) allows.
        query = _queued_under_stamp(statement)
        params = {"rows": [row], "stamp_name": stamp_name, "stamp": stamp}
        [[now]] = self._auto("WRITE", query, params)
        return None if stamp is None or now == stamp else now

    @_reaching_server
    def change_stamp(self, name: str) -> str | None:
        [[now]] = self.read(_STAMP, {"stamp_name": name})
        return now

    @_reaching_server
    def restamp(self, name: str) -> None:
        with self.driver.session(database=self.database) as session:
            self._restamp(session, name)

    @staticmethod
    def _restamp(session, name: str) -> None:
        session.execute_write(_rows, _RESTAMP, {"stamp_name": name, "stamp_value": secrets.token_hex(8)})

    def bounded_lineage(
        self,
        node_id: str,
        direction: LineageDirection,
        depth: int = 3,
        limit: int = 500,
        level: Level = "column",
        kinds: Sequence[str] | None = None,
    ) -> LineageView | None:
        """GraphStore.bounded_lineage's answer in one statement (`_lineage_statement`): on Neo4j
        each statement is a Bolt round trip (0.6 ms here), and a 3-hop walk was four. Deeper than
        LINEAGE_STATEMENT_DEPTH (the API's largest), the shared walk: a statement of a subquery
        per hop would take longer to plan than its round trips save, and the walk stops early."""
        if depth > LINEAGE_STATEMENT_DEPTH:
            return super().bounded_lineage(node_id, direction, depth, limit, level, kinds)
        label = "Column" if level == "column" else "Table"
        walks = ("upstream", "downstream") if direction == "both" else (direction,)
        cap = limit * 4 + 1
        params = {"id": node_id, "kinds": list(kinds) if kinds else None, "cap": cap, "limit": limit}
        found = self.read(_lineage_statement(label, walks, max(depth, 0)), params)
        if not found:
            return None
        [[root_tags, hops]] = found
        nodes = {node_id: LineageNode.at(node_id, label, root_tags)}
        edges: dict[tuple, LineageEdge] = {}
        truncated = False
        for at, walk in enumerate(walks):
            for rows in hops[at * depth : (at + 1) * depth]:
                _, cut = self._lineage_hop(rows, walk, label, limit, cap, nodes, edges)
                truncated = truncated or cut
        return LineageView(
            root=node_id,
            direction=direction,
            level=level,
            depth=depth,
            nodes=list(nodes.values()),
            edges=list(edges.values()),
            truncated=truncated,
        )

    @_reaching_server
    def description_matches(self, label: str, words: Sequence[str], skip: int, limit: int) -> list[str]:
        terms = description_terms(words)
        if not terms:
            return []
        terms = [f"{_lucene_prefix(term)}*" for term in terms]
        return self._index_matches(f"watershed_{label.lower()}_description", terms, skip, limit)

    @_reaching_server
    def id_word_matches(
        self, label: str, words: Sequence[str], skip: int, limit: int, near: Sequence[str] = ()
    ) -> list[str]:
        terms = [f"{_lucene_prefix(term)}*" for term in description_terms(words)]
        # `w~1`: a word within one edit of w (Lucene's fuzzy term: a swap of neighbours is one)
        terms += [f"{term}~1" for term in description_terms(near)]
        if not terms:
            return []
        return self._index_matches(f"watershed_{label.lower()}_id_words", terms, skip, limit)

    def _index_matches(self, index: str, terms: list[str], skip: int, limit: int) -> list[str]:
        query = " AND ".join(terms)
        params = {"index": index, "query": query, "skip": skip, "n": limit}
        return [row[0] for row in self.read(_DESCRIBED, params)]

    @_reaching_server
    def ensure_schema(self) -> None:
        with self.driver.session(database=self.database) as session:
            for statement in CONSTRAINTS + FULLTEXT_INDEXES + [AWAIT_INDEXES]:
                session.run(statement).consume()
            if list(session.run(_STAMPED, {"stamp_name": _BACKFILLED})):
                return
            for statement in _ID_WORDS_BACKFILL.values():
                session.run(statement).consume()
            self._restamp(session, _BACKFILLED)

    @_reaching_server
    def clear(self) -> None:
        # in batches, each its own transaction: one transaction deleting a large graph holds every
        # change in the heap (CALL ... IN TRANSACTIONS runs only in an auto-commit transaction)
        with self.driver.session(database=self.database) as session:
            session.run("MATCH (n) CALL { WITH n DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()
            # everything kept under any stamp described the graph just deleted
            self._restamp(session, EPOCH)
        self.forget_columns()

    def close(self) -> None:
        with self._kept_lock:
            kept_now = list(self._kept)
        for kept in kept_now:
            kept.close()
        self.driver.close()
