"""Every statement the Neo4j backend would send is valid Neo4j 5 Cypher, by Neo4j's own parser.

No Neo4j server can run here. The data statements are shared by both backends, so the real
workloads (load, reads, propagation, TTL advice, accounts and audit, every HTTP route) run on
FalkorDB through a store that records each statement it is sent, together with the names of the
parameters it is sent with; the distinct statements, plus the Neo4j backend's own schema
statements, then go in one call to tests/cypher/lint.mjs (npm @neo4j-cypher/language-support, the
parser and semantic analysis of Neo4j's editors, with Neo4j 5's built-in functions and procedures).
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections import defaultdict
from typing import Any

import pytest

from tests.graph.workload import call_every_route, run_graph_and_engines
from tests.support.cypher_lint import lint
from tests.support.neo4j_recorder import Recorder
from watershed.api.service.audit import QUEUED_ENTRIES, audit_params
from watershed.graph.falkordb_store import INDEXES, FalkorDBStore
from watershed.graph.neo4j_store import CONSTRAINTS, Neo4jStore
from watershed.graph.queries import lineage_count
from watershed.graph.server import free_port
from watershed.graph.store import DATA_STAMP, GraphStore

#: distinct statements the workloads below sent when this test was written (119): far fewer means
#: a workload stopped running, not that the code got simpler
MIN_STATEMENTS = 110
PACKAGES = {"graph", "propagation", "ttl_advisor", "orc_crypto", "api"}


class RecordingStore(FalkorDBStore):
    """FalkorDB, recording every statement with each set of parameter names it is sent with and the
    package that built it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params: dict[str, set[frozenset[str]]] = defaultdict(set)
        self.packages: dict[str, set[str]] = defaultdict(set)

    def _record(self, query: str, params: dict[str, Any] | None) -> None:
        self.params[query].add(frozenset(params or {}))
        frame = sys._getframe(2)
        while frame is not None:
            module = frame.f_globals.get("__name__", "")
            if module.startswith("watershed.") and module != "watershed.graph.falkordb_store":
                self.packages[query].add(module.split(".")[1])
                break
            frame = frame.f_back

    def read(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        self._record(query, params)
        return super().read(query, params)

    def execute(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        self._record(query, params)
        return super().execute(query, params)

    def record(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        self._record(query, params)
        return super().record(query, params)

    def queue_record(self, statement: str, row: dict[str, Any], **stamp: Any) -> str | None:
        # what it queues is sent later by `run_queued`: recorded here, as it is queued
        self._record(statement, {"rows": [row]})
        return super().queue_record(statement, row, **stamp)

    def write_all(self, statements: list[tuple[str, dict[str, Any]]]) -> None:
        for query, params in statements:
            self._record(query, params)
        super().write_all(statements)

    def _lineage_rows(self, label: str, direction: str, depth: int, node_id: str) -> list[tuple]:
        # FalkorDB sends the shared lineage query raw (its verbose reply format); the generic path
        # sends the same query through `read`, as the Neo4j backend does, so it is recorded.
        return GraphStore._lineage_rows(self, label, direction, depth, node_id)


def test_the_linter_knows_neo4j_5_from_other_cypher():
    """The check itself: Neo4j 5 forms pass; a typo, a FalkorDB-only call and a missing parameter do not."""
    good = [
        {"query": "MATCH (n:Column {id: $id}) RETURN n.id", "params": ["id"]},
        {"query": "UNWIND $rows AS r MERGE (c:Column {id: r.id}) SET c += r.props", "params": ["rows"]},
        {"query": "MATCH (n) CALL { WITH n MATCH (n)-->(m) RETURN count(m) AS c } RETURN n, c", "params": []},
        {"query": "CALL db.index.fulltext.queryNodes('names', $q) YIELD node RETURN node", "params": ["q"]},
        {"query": CONSTRAINTS[0], "params": None},
    ]
    bad = [
        {"query": "MATCH (n RETURN n", "params": []},
        {"query": "CALL db.idx.fulltext.queryNodes('Column', $q) YIELD node RETURN node", "params": ["q"]},
        {"query": "RETURN toJSON({a: 1})", "params": []},
        {"query": "MATCH (n {id: $id}) RETURN n", "params": []},
    ]
    answers = lint(good + bad)
    assert [a["errors"] for a in answers[: len(good)]] == [[]] * len(good)
    assert all(a["errors"] for a in answers[len(good) :]), answers[len(good) :]


def test_neo4j_has_a_constraint_or_index_for_each_falkordb_index():
    """The lookups FalkorDB indexes are indexed on Neo4j too (a unique constraint brings an index)."""
    falkordb = {re.search(r"\(n:(\w+)\) ON \(n\.(\w+)\)", s).groups() for s in INDEXES}
    neo4j = {
        re.search(r"\(n:(\w+)\) (?:ON \(|REQUIRE )n\.(\w+)", s).groups() for s in CONSTRAINTS if "(n:" in s
    }
    assert falkordb <= neo4j, f"no Neo4j constraint or index for {sorted(falkordb - neo4j)}"


@pytest.fixture
def recording_store(falkordb_server):
    store = RecordingStore(falkordb_server.host, falkordb_server.port, graph=f"cypher_{free_port()}")
    store.ensure_schema()
    yield store
    store.clear()
    store.close()


def neo4j_own_statements() -> list[tuple[str, dict]]:
    """What the Neo4j backend sends of its own (schema, clear, its change stamps and a record
    queued under one), through the recording driver, with the parameters each is sent."""
    recorder = Recorder()
    store = Neo4jStore(recorder, database="lineage")
    store.ensure_schema()
    store.clear()
    store.restamp(DATA_STAMP)
    # the recorder answers no rows, which these unpack: only what they send matters here
    with contextlib.suppress(ValueError):
        store.change_stamp(DATA_STAMP)
    with contextlib.suppress(ValueError):
        store.queue_record(QUEUED_ENTRIES, audit_params("a", "authz.decision", "t"), stamp="s")
    statements = [(query, params) for _, sent in recorder.transactions for query, params in sent]
    assert set(CONSTRAINTS) <= {query for query, _ in statements}
    return statements


def test_every_statement_of_the_workloads_is_neo4j_5_cypher(recording_store, run_state_redis, tmp_path):
    run_graph_and_engines(recording_store, tmp_path / "warehouse", run_state_redis.port)
    call_every_route(recording_store, run_state_redis.port, tmp_path / "api-data")

    sent = recording_store.params
    packages = set().union(*recording_store.packages.values())
    assert packages >= PACKAGES, f"no statement recorded from {sorted(PACKAGES - packages)}"
    assert len(sent) >= MIN_STATEMENTS, f"only {len(sent)} distinct statements recorded"
    # one check per set of parameters a statement is sent with: each call must give all it uses
    items = [{"query": q, "params": sorted(names)} for q, variants in sent.items() for names in variants]
    items += [{"query": query, "params": sorted(params)} for query, params in neo4j_own_statements()]
    # the traversal count the query benchmark sends (bench/), for each label and direction
    items += [
        {"query": lineage_count(label, direction, 4), "params": ["id"]}
        for label in ("Column", "Table")
        for direction in ("upstream", "downstream")
    ]
    invalid = [answer for answer in lint(items) if answer["errors"]]
    assert not invalid, f"{len(invalid)} of {len(items)} statements are not Neo4j 5 Cypher:\n" + "\n".join(
        f"- {answer['query']}\n    " + "\n    ".join(answer["errors"]) for answer in invalid
    )
