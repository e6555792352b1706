"""Every statement the Neo4j backend would send is valid Neo4j 5 Cypher, by Neo4j's own parser.

No Neo4j server can run here. The data statements are shared by both backends, so the real
workloads (load, reads, propagation, TTL advice, accounts and audit, every HTTP route) run on
FalkorDB through a store that records each statement it is sent, together with the names of the
parameters it is sent with; the distinct statements, plus the Neo4j backend's own schema
statements, then go in one call to tests/cypher/lint.mjs (npm @neo4j-cypher/language-support, the
parser and semantic analysis of Neo4j's editors, with Neo4j 5's built-in functions and procedures).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.propagation_bench import load_generated
from tests.api.conftest import ThreadServer
from tests.graph.test_neo4j_store import Recorder
from watershed.graph.falkordb_store import INDEXES, FalkorDBStore
from watershed.graph.model import HarvestRun
from watershed.graph.neo4j_store import CONSTRAINTS, Neo4jStore
from watershed.graph.queries import lineage_count
from watershed.graph.server import ServerSpec, free_port, start, stop
from watershed.graph.store import GraphStore
from watershed.ingest.generator import generate_warehouse, seed_apps

LINT = Path(__file__).resolve().parents[1] / "cypher" / "lint.mjs"
#: distinct statements the workloads below sent when this test was written (119): far fewer means
#: a workload stopped running, not that the code got simpler
MIN_STATEMENTS = 110
PACKAGES = {"graph", "propagation", "ttl_advisor", "api"}


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

    def write_all(self, statements: list[tuple[str, dict[str, Any]]]) -> None:
        for query, params in statements:
            self._record(query, params)
        super().write_all(statements)

    def _lineage_rows(self, label: str, direction: str, depth: int, node_id: str) -> list[tuple]:
        # FalkorDB sends the shared lineage query raw (its verbose reply format); the generic path
        # sends the same query through `read`, as the Neo4j backend does, so it is recorded.
        return GraphStore._lineage_rows(self, label, direction, depth, node_id)


def lint(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lint script's answer for each {query, params} (params None: syntax and names only)."""
    if shutil.which("node") is None or not (LINT.parent / "node_modules").is_dir():
        pytest.fail("tests/cypher needs node and its npm packages: run scripts/bootstrap.sh")
    done = subprocess.run(
        ["node", str(LINT)], input=json.dumps(items), capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


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
def run_state_redis(tmp_path):
    spec = ServerSpec("redis", "127.0.0.1", free_port(), tmp_path / "redis", with_falkordb=False)
    start(spec)
    yield spec
    stop(spec)


@pytest.fixture
def recording_store(falkordb_server):
    store = RecordingStore(falkordb_server.host, falkordb_server.port, graph=f"cypher_{free_port()}")
    store.ensure_schema()
    yield store
    store.clear()
    store.close()


def run_graph_and_engines(store: RecordingStore, directory: Path, redis_port: int) -> None:
    """Load, every public read, propagation with seeds/manual tags/blocks and retraction, TTL advice."""
    from watershed.propagation.coordinator import local_runner, propagate
    from watershed.propagation.graph_store import GraphTagStore
    from watershed.propagation.policy import default_policy
    from watershed.propagation.run_state import RunState
    from watershed.propagation.settings import PropagationSettings
    from watershed.ttl_advisor.advisor import advise
    from watershed.ttl_advisor.graph_uses import catalog_from_graph, index_graph
    from watershed.ttl_advisor.store import store_recommendations

    generate_warehouse(directory, tasks=30, seed=5)
    store.record_run(HarvestRun(id="h1", started_at="2024-01-01T00:00:00"))
    _, catalog = load_generated(store, directory)
    table = next(i for i in sorted(catalog.tables) if i.startswith("ods."))
    column = next(c for c in store.known_columns() if c.startswith(table + "."))
    tasks = store.task_ids()
    store.stored_versions(tasks[:5])
    for level, node in (("column", column), ("table", table)):
        for direction in ("upstream", "downstream", "both"):
            store.lineage(node, "downstream" if direction == "both" else direction, level=level)
            store.bounded_lineage(node, direction, level=level)
            store.bounded_lineage(node, direction, level=level, kinds=["direct"])
        store.neighbours([node], "upstream")
        store.neighbours([node], "downstream")
    store.nodes([table, column])
    store.search(table[:5])
    store.search("nothing-like-this")
    store.stats()

    policy = default_policy()
    tags = GraphTagStore(store, policy)
    seed_apps(tags, catalog)
    tags.set_tag(column, "pii", ["L2"], by="test")
    tags.block(column, "app", by="test")
    tags.own_tags(column)
    tags.tags_of([column, table])
    tags.seeded_nodes()
    tags.tagged_nodes()
    settings = PropagationSettings(
        falkordb_port=store.client.connection.connection_pool.connection_kwargs["port"],
        graph_name=store.graph_name,
        celery_broker=f"redis://127.0.0.1:{redis_port}/0",
    )
    state = RunState.from_url(settings.broker_url(), store.graph_name)
    assert propagate(store, policy, state, local_runner, full=True, settings=settings).status == "done"
    assert tags.unset_tag(column, "pii") and tags.unblock(column, "app")
    assert propagate(store, policy, state, local_runner, settings=settings).status == "done"

    graph_catalog = catalog_from_graph(store)
    store_recommendations(store, advise(index_graph(store, graph_catalog), graph_catalog), "ttl-1")
    store.delete_tasks(tasks[:3])


def call_every_route(store: RecordingStore, redis_port: int, data_dir: Path) -> None:
    """Each route of the steward service once (as admin), on the loaded and propagated graph."""
    from watershed.api.accounts.store import AccountStore
    from watershed.api.http.app import create_app
    from watershed.api.http.settings import ApiSettings

    settings = ApiSettings(
        falkordb_port=store.client.connection.connection_pool.connection_kwargs["port"],
        graph_name=store.graph_name,
        celery_broker=f"redis://127.0.0.1:{redis_port}/0",
        data_dir=data_dir,
        propagation_stall_seconds=30,
    )
    accounts = AccountStore(store)
    accounts.add("admin", "admin", None, actor="test")
    token = accounts.create_token("admin", "test").token
    [table, column] = store.read(
        "MATCH (t:Table)-[:HAS_COLUMN]->(c:Column) WHERE t.id STARTS WITH 'ods.' "
        "RETURN t.id, c.id ORDER BY c.id LIMIT 1"
    )[0]
    [source, target] = store.read(
        "MATCH (a:Table)-[:FLOWS_TO]->(b:Table) RETURN a.id, b.id ORDER BY a.id LIMIT 1"
    )[0]
    substring = column.rsplit(".", 1)[1][1:]  # inside ids, at the start of none
    port = free_port()
    server = ThreadServer(create_app(settings, store), port)
    server.start()
    headers = {"Authorization": f"Bearer {token}"}
    try:
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}/api/v1", headers=headers, timeout=60)
        calls = [
            ("GET", "/health", None),
            ("GET", "/me", None),
            ("GET", "/search", {"params": {"q": table[:6]}}),
            ("GET", "/search", {"params": {"tag": "pii>=L1", "kind": "column", "db": "ods"}}),
            ("GET", "/search", {"params": {"tag": "app"}}),
            ("GET", "/search", {"params": {"q": substring}}),
            ("GET", "/search", {"params": {"q": substring, "db": "ods"}}),
            ("GET", f"/tables/{table}", None),
            ("GET", f"/tables/{table}/ddl", None),
            ("GET", f"/columns/{column}", None),
            ("GET", f"/lineage/{column}", None),
            ("GET", f"/lineage/{table}", {"params": {"level": "table", "direction": "both"}}),
            ("GET", "/edges", {"params": {"source": column, "target": column}}),
            ("GET", "/edges", {"params": {"source": source, "target": target}}),
            ("POST", "/lineage/sql", {"json": {"sql": "insert into a.t select x from b.s"}}),
            ("PUT", f"/nodes/{column}/tags/pii", {"json": {"values": ["L3"]}}),
            ("GET", f"/nodes/{column}/tags", None),
            ("GET", f"/nodes/{column}/tags/pii/why", None),
            ("DELETE", f"/nodes/{column}/tags/pii", None),
            ("PUT", f"/nodes/{column}/blocks/app", None),
            ("DELETE", f"/nodes/{column}/blocks/app", None),
            ("POST", "/propagation/runs", {"json": {"full": False}}),
            ("GET", "/propagation/runs", None),
            ("GET", "/propagation/runs/prop-nope", None),
            ("POST", "/propagation/runs/prop-nope/cancel", None),
            ("GET", "/harvest/runs", None),
            ("GET", "/harvest/runs/h1", None),
            ("GET", "/harvest/runs/h1/errors", None),
            ("GET", "/ttl/advice", None),
            ("GET", "/ttl/advice", {"params": {"table": table, "min_savings": 1}}),
            ("POST", "/users", {"json": {"name": "dora", "role": "viewer"}}),
            ("GET", "/users", None),
            ("GET", "/users/dora", None),
            ("PATCH", "/users/dora", {"json": {"role": "steward", "databases": ["ods"]}}),
            ("POST", "/users/dora/tokens", None),
            ("GET", "/users/dora/tokens", None),
            ("DELETE", "/users/dora/tokens/nope", None),
        ]
        for method, path, kwargs in calls:
            answered(client.request(method, path, **(kwargs or {})))
        dora = answered(client.post("/users/dora/tokens")).json()
        answered(client.delete(f"/users/dora/tokens/{dora['id']}"))
        for method, path in (("DELETE", "/users/dora"), ("GET", "/audit")):
            answered(client.request(method, path, params={"actor": "admin", "action": "user."}))
        # the browser's way in: a session cookie instead of the bearer token
        with httpx.Client(base_url=client.base_url, timeout=60) as browser:
            answered(browser.post("/session", json={"token": token}))
            answered(browser.get("/me"))
            answered(browser.delete("/session", headers={"X-Watershed-CSRF": "1"}))
    finally:
        server.stop()


def answered(answer: httpx.Response) -> httpx.Response:
    # A 4xx is fine (a made-up id), and so is the 503 of a run without Celery workers (its
    # statements ran); any other 5xx means a statement failed on FalkorDB already.
    assert answer.status_code < 500 or answer.status_code == 503, (answer.request.url, answer.text)
    return answer


def neo4j_own_statements() -> list[str]:
    """What the Neo4j backend sends of its own (schema, clear), through the recording driver."""
    recorder = Recorder()
    store = Neo4jStore(recorder, database="lineage")
    store.ensure_schema()
    store.clear()
    statements = [query for _, sent in recorder.transactions for query, _ in sent]
    assert set(CONSTRAINTS) <= set(statements)
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
    items += [{"query": statement, "params": []} for statement in neo4j_own_statements()]
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
