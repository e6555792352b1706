"""The product's real workload on a graph: a load, every public graph read, propagation with
seeds, manual tags, blocks and retraction, TTL advice, and every route of the steward service
(accounts, sessions, audit).

Run by the tests that must see every statement or property the product sends:
test_neo4j_cypher.py (each statement through Neo4j's parser) and test_replicated_properties.py
(each property name registered for crash replay).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from bench.propagation_bench import load_generated
from tests.api.conftest import ThreadServer
from watershed.graph.falkordb_store import FalkorDBStore
from watershed.graph.model import HarvestRun
from watershed.graph.server import free_port
from watershed.ingest.generator import generate_warehouse, seed_apps


def run_graph_and_engines(store: FalkorDBStore, directory: Path, redis_port: int) -> None:
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
    store.catalog_entries([table, "no_such_db.no_such_table"])
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
    run_protection_records(store, policy, table)
    store.delete_tasks(tasks[:3])


#: a key provider the workload never reaches (rewrap fails on the missing file first)
_NO_KEYS: Any = object()


def run_protection_records(store: FalkorDBStore, policy, table: str) -> None:
    """The protection planner's reads (every table, some tables) and every record it keeps."""
    from watershed.graph.protection import ColumnKey, ProtectedFile, ProtectionRun, TableProtection
    from watershed.orc_crypto.protect import records
    from watershed.orc_crypto.protect.plan import plan_protection
    from watershed.orc_crypto.protect.spark_apply import rewrap_files

    key = ColumnKey(key="pii", mask="nullify", version=0)
    records.save_files(
        store,
        [
            ProtectedFile(
                path="/w/f.orc",
                table=table,
                columns={"c": key},
                size=1,
                mtime_ns=1,
                sha256="0",
                at="t",
                run="p1",
            )
        ],
    )
    records.save_table(store, TableProtection(table=table, columns={"c": key}, at="t", run="p1"))
    records.save_run(store, ProtectionRun(id="p1", started_at="2024-01-01T00:00:00"))
    plan_protection(store, policy.protection)
    plan_protection(store, policy.protection, tables=[table])
    records.files_of(store, [table])
    records.runs(store, 5)
    records.run(store, "p1")
    # rewrap finds the protected tables itself; the recorded file does not exist, so it is reported
    # before any key is asked for
    run = rewrap_files(store, provider=_NO_KEYS)
    assert [p.path for p in [*run.errors, *run.skipped]] == ["/w/f.orc"], run


def call_every_route(store: FalkorDBStore, redis_port: int, data_dir: Path) -> None:
    """Each route of the steward service once (as admin), on the loaded and propagated graph."""
    from watershed.api.http.app import create_app
    from watershed.api.http.settings import ApiSettings
    from watershed.api.service.accounts.store import AccountStore

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
            ("GET", f"/impact/{column}", None),
            ("GET", f"/impact/{table}", {"params": {"format": "csv"}}),
            ("GET", "/edges", {"params": {"source": column, "target": column}}),
            ("GET", "/edges", {"params": {"source": source, "target": target}}),
            ("POST", "/lineage/sql", {"json": {"sql": "insert into a.t select x from b.s"}}),
            ("PUT", f"/nodes/{column}/tags/pii", {"json": {"values": ["L3"]}}),
            ("GET", f"/nodes/{column}/tags", None),
            ("GET", f"/nodes/{column}/tags/pii/why", None),
            ("DELETE", f"/nodes/{column}/tags/pii", None),
            ("PUT", f"/nodes/{column}/blocks/app", None),
            ("DELETE", f"/nodes/{column}/blocks/app", None),
            ("PUT", f"/nodes/{column}/description", {"json": {"value": "A column described"}}),
            ("PUT", f"/nodes/{table}/owner", {"json": {"value": "crm-team"}}),
            ("GET", f"/nodes/{column}/metadata", None),
            ("DELETE", f"/nodes/{column}/description", None),
            ("DELETE", f"/nodes/{table}/owner", None),
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
            ("POST", "/authz/roles", {"json": {"name": "analyst"}}),
            ("POST", "/authz/roles/analyst/members", {"json": {"kind": "group", "name": "analysts"}}),
            ("POST", "/authz/groups/analysts/users", {"json": {"user": "dora"}}),
            ("GET", "/authz/groups", None),
            ("POST", "/authz/grants", {"json": {"role": "analyst", "actions": ["select"], "table": table}}),
            ("POST", "/authz/grants", {"json": {"role": "analyst", "actions": ["unmask"], "tag": "pii<=L2"}}),
            ("POST", "/authz/grants", {"json": {"role": "analyst", "actions": ["all"], "database": "ods"}}),
            ("GET", "/authz/grants", {"params": {"user": "dora"}}),
            ("GET", "/authz/roles", None),
            ("POST", "/authz/points", {"json": {"sql": f"SELECT * FROM {table}"}}),
            ("POST", "/authz/check", {"json": {"sql": f"SELECT * FROM {table}", "user": "dora"}}),
            ("POST", "/authz/rewrite", {"json": {"sql": f"SELECT * FROM {table}", "user": "dora"}}),
            ("DELETE", "/authz/groups/analysts/users/dora", None),
            ("DELETE", "/authz/roles/analyst/members/group/analysts", None),
        ]
        for method, path, kwargs in calls:
            answered(client.request(method, path, **(kwargs or {})))
        dora = answered(client.post("/users/dora/tokens")).json()
        answered(client.delete(f"/users/dora/tokens/{dora['id']}"))
        for grant in answered(client.get("/authz/grants", params={"role": "analyst"})).json()["items"][:1]:
            answered(client.delete(f"/authz/grants/{grant['id']}"))
        answered(client.delete("/authz/roles/analyst"))
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
