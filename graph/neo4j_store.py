"""The production backend: Neo4j 5 through the official `neo4j` driver (Bolt).

The data queries are the shared ones in `graph.queries`; only the schema
statements are Neo4j's own. A load runs as one managed write transaction
(`execute_write`), which the driver retries on transient errors (leader
changes, deadlocks), so a load is all-or-nothing and safe to retry.
"""

from __future__ import annotations

import functools
from typing import Any
from urllib.parse import urlsplit

from watershed.graph import neo4j_server
from watershed.graph.errors import GraphUnavailableError, first_line
from watershed.graph.settings import GraphSettings
from watershed.graph.store import GraphStore

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
]


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


class Neo4jStore(GraphStore):
    def __init__(self, driver, database: str = "neo4j", batch_size: int = 5000, where: str = "Neo4j") -> None:
        self.driver = driver
        self.database = database
        self.batch_size = batch_size
        #: where the graph is, as errors name it (no credential)
        self.where = f"{where}, database {database}"

    @classmethod
    def from_settings(cls, settings: GraphSettings | None = None) -> Neo4jStore:
        from neo4j import GraphDatabase

        settings = settings or GraphSettings()
        # the settings' password, WATERSHED_NEO4J_PASSWORD_FILE's, or the local Neo4j's own
        secret = neo4j_server.password(settings)
        driver = GraphDatabase.driver(settings.neo4j_uri, auth=(settings.neo4j_user, secret))
        # the address only: a URI may carry user:password@
        address = urlsplit(settings.neo4j_uri)
        where = f"Neo4j at {address.scheme}://{address.hostname}:{address.port or 7687}"
        return cls(driver, settings.neo4j_database, settings.load_batch_size, where)

    @_reaching_server
    def ping(self) -> None:
        # A managed read retries a server that is down for 30 s; this answers at once.
        self.driver.verify_connectivity()

    @_reaching_server
    def read(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        def read(tx):
            return [list(record.values()) for record in tx.run(query, params or {})]

        with self.driver.session(database=self.database) as session:
            return session.execute_read(read)

    @_reaching_server
    def write_all(self, statements: list[tuple[str, dict[str, Any]]]) -> None:
        def write(tx):
            for query, params in statements:
                tx.run(query, params).consume()

        with self.driver.session(database=self.database) as session:
            session.execute_write(write)

    @_reaching_server
    def execute(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        def write(tx):
            return [list(record.values()) for record in tx.run(query, params or {})]

        with self.driver.session(database=self.database) as session:
            return session.execute_write(write)

    @_reaching_server
    def ensure_schema(self) -> None:
        with self.driver.session(database=self.database) as session:
            for statement in CONSTRAINTS:
                session.run(statement).consume()

    @_reaching_server
    def clear(self) -> None:
        # in batches, each its own transaction: one transaction deleting a large graph holds every
        # change in the heap (CALL ... IN TRANSACTIONS runs only in an auto-commit transaction)
        with self.driver.session(database=self.database) as session:
            session.run("MATCH (n) CALL { WITH n DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()
        self.forget_columns()

    def close(self) -> None:
        self.driver.close()
