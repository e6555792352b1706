"""OpenLineage's Spark listener (1.53.0, Maven Central, fetched by scripts/bootstrap.sh) attached to
a local PySpark 4.3 session whose HTTP transport points at Watershed's POST /api/v1/lineage with a
producer's token (api_key auth): a SQL job, then a DataFrame job with a hashed column and a job
writing Parquet files (tests/support/openlineage_spark_jobs.py, `sql-first`: the listener sends the
SQL job's text as the SQL facet of the two later jobs too, as in any script that mixes both).

- Every event the listener sent reached the endpoint with the token, and Watershed took it (2xx);
  the events say what the jobs did (the listener's own column lineage, checked here so a listener
  that stops reporting it is seen as such, not as an intake bug).
- The graph gets all three jobs: the SQL job read by Watershed's extractor from its SQL facet, the
  DataFrame and file jobs from their column facets, their stale SQL facet dropped (the file job's
  output a `path:` node).
- The DataFrame job's hashed column is downgraded by propagation: a steward's pii=L4 on
  customers.email reaches customer_orders.email as L4 through the SQL job and
  customers_hashed.email_hash as the policy's pseudonymised level through the `masking` hop.

The listener posts through a pass-through capture server (tests/support/openlineage_capture.py)
that keeps each event and Watershed's answer to it.
"""

from __future__ import annotations

import itertools

import httpx
import pytest

from tests.support.api_service import ThreadServer, make_settings, propagate_locally
from tests.support.openlineage_capture import CaptureServer
from tests.support.openlineage_spark_jobs import APP_NAME, ENDPOINT, job_events, run_jobs
from watershed.graph.server import free_port

pytestmark = pytest.mark.spark  # the jobs' JVM is a process of the test's own, not the `spark` fixture

NAMESPACE = "spark-tests"
_graphs = itertools.count()


@pytest.fixture(scope="module")
def watershed(falkordb_server, celery_redis, tmp_path_factory):
    """The service on an empty graph of its own; a producer's token and a steward's. The local
    Spark's session catalog names its tables in `symlinks` under the warehouse's URI, so one rule
    (docs/openlineage.md, "Pointing producers at Watershed") reads that namespace as tables."""
    from watershed.api.http.app import create_app
    from watershed.api.service.accounts.store import AccountStore
    from watershed.graph.falkordb_store import FalkorDBStore

    workdir = tmp_path_factory.mktemp("ol-spark")
    name = f"ol_spark_{next(_graphs)}"
    store = FalkorDBStore(falkordb_server.host, falkordb_server.port, graph=name)
    store.ensure_schema()
    settings = make_settings(falkordb_server, celery_redis, name, tmp_path_factory.mktemp("ol-api-data"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(
            "WATERSHED_OPENLINEAGE_NAMESPACES",
            f'[["file:{workdir}/warehouse", "table"], ["file", "path:fs"]]',
        )
        accounts = AccountStore(store)
        tokens = {}
        for user, role in (("spark", "producer"), ("steward", "steward")):
            accounts.add(user, role, None, actor="test")
            tokens[user] = accounts.create_token(user, "test").token
        port = free_port()
        server = ThreadServer(create_app(settings, store), port)
        server.start()
        try:
            yield {
                "url": f"http://127.0.0.1:{port}",
                "store": store,
                "settings": settings,
                "tokens": tokens,
                "workdir": workdir,
            }
        finally:
            server.stop()
            store.clear()
            store.close()


@pytest.fixture(scope="module")
def sent(watershed):
    """The three jobs run once, the listener sending to Watershed: what it posted, as kept."""
    with CaptureServer(forward_to=watershed["url"]) as capture:
        run_jobs(capture.url, watershed["tokens"]["spark"], NAMESPACE, watershed["workdir"], "sql-first")
        return list(capture.posts)


def _complete(events: list[dict]) -> dict:
    """A job's last COMPLETE event: the one with the whole column lineage."""
    return [e for e in events if e["eventType"] == "COMPLETE"][-1]


def _sql(event: dict) -> str:
    return (event["job"].get("facets", {}).get("sql") or {}).get("query", "")


def _sources(event: dict, output: str, column: str) -> set[tuple[str, str, str, bool]]:
    """(input path's last segment, field, type/subtype, masking) of an output column."""
    [dataset] = [o for o in event["outputs"] if o["name"].endswith("/" + output)]
    fields = dataset["facets"]["columnLineage"]["fields"][column]["inputFields"]
    return {
        (f["name"].rsplit("/", 1)[1], f["field"], f"{t['type']}/{t['subtype']}", t.get("masking", False))
        for f in fields
        for t in f["transformations"]
    }


def test_every_event_reached_watershed_with_the_token_and_was_taken(sent, watershed):
    assert len(sent) > 10
    assert {p.path for p in sent} == {ENDPOINT}
    assert {p.authorization for p in sent} == {f"Bearer {watershed['tokens']['spark']}"}
    refused = [
        (p.event["job"]["name"], p.event["eventType"], p.status, p.answer) for p in sent if p.status >= 300
    ]
    assert refused == []
    assert {p.event["job"]["namespace"] for p in sent} == {NAMESPACE}
    assert {p.event["job"]["name"] for p in sent if "parent" not in p.event["run"]["facets"]} == {APP_NAME}


def test_the_listener_reports_each_jobs_column_lineage(sent):
    events = [p.event for p in sent]
    sql = _complete(job_events(events, "sql"))
    assert "INSERT INTO customer_orders" in sql["job"]["facets"]["sql"]["query"]
    assert _sources(sql, "customer_orders", "email") == {("customers", "email", "DIRECT/IDENTITY", False)}
    assert _sources(sql, "customer_orders", "amount") == {("orders", "amount", "DIRECT/IDENTITY", False)}

    dataframe = _complete(job_events(events, "dataframe"))
    # the listener's stale SQL facet: the SQL job's text, not this job's (Watershed drops it)
    assert any("INSERT INTO customer_orders" in _sql(e) for e in job_events(events, "dataframe"))
    assert _sources(dataframe, "customers_hashed", "email_hash") == {
        ("customers", "email", "DIRECT/TRANSFORMATION", True)
    }

    files = _complete(job_events(events, "files"))
    [output] = files["outputs"]
    assert output["namespace"] == "file" and output["name"].endswith("/files/order_totals"), output
    assert "symlinks" not in output["facets"]
    assert _sources(files, "order_totals", "total_amount") == {
        ("orders", "amount", "DIRECT/AGGREGATION", False)
    }


def _client(watershed, who: str) -> httpx.Client:
    return httpx.Client(
        base_url=watershed["url"] + "/api/v1",
        headers={"Authorization": f"Bearer {watershed['tokens'][who]}"},
        timeout=60,
    )


def _flows(store, target: str) -> set[tuple[str, str]]:
    """(source column, kind) of every FLOWS_TO edge into a column."""
    rows = store.read(
        "MATCH (s:Column)-[f:FLOWS_TO]->(t:Column {id: $id}) RETURN s.id, f.kind", {"id": target}
    )
    return {(source, kind) for source, kind in rows}


def test_the_graph_gets_all_three_jobs(sent, watershed):
    store = watershed["store"]
    workdir = watershed["workdir"]
    tasks = {row[0] for row in store.read("MATCH (k:Task) RETURN k.id")}
    writes = {
        (task, table) for task, table in store.read("MATCH (k:Task)-[:WRITES]->(t:Table) RETURN k.id, t.id")
    }
    written = {table for _, table in writes}
    order_totals = f"path:fs.{workdir}/files/order_totals".lower()
    assert {"default.customer_orders", "default.customers_hashed"} <= written, writes
    assert any(table.replace("`", "") == order_totals for table in written), writes
    assert all(task.startswith(f"{NAMESPACE}.") for task in tasks), tasks
    # the later jobs' stale SQL facet (the INSERT's text) was not read as their lineage: only the
    # jobs named after customer_orders write it, and the file job writes its directory alone
    assert all("customer_orders" in task for task, table in writes if table == "default.customer_orders"), (
        writes
    )
    assert {table.replace("`", "") for task, table in writes if "order_totals" in task} == {order_totals}

    # the SQL job, read by the extractor from its SQL facet: direct copies, the join and the filter
    assert _flows(store, "default.customer_orders.email") == {("default.customers.email", "direct")}
    assert _flows(store, "default.customer_orders.amount") == {("default.orders.amount", "direct")}
    weak = {
        (column, role)
        for column, role in store.read(
            "MATCH (c:Column)-[i:INFLUENCES]->(:Table {id: 'default.customer_orders'}) RETURN c.id, i.role"
        )
    }
    assert {("default.orders.amount", "filter"), ("default.customers.customer_id", "join")} <= weak, weak
    # the DataFrame job, from its column facet: the hash is an expression of email
    assert _flows(store, "default.customers_hashed.email_hash") == {("default.customers.email", "expression")}


def test_propagation_downgrades_the_dataframe_jobs_hashed_column(sent, watershed):
    store, settings = watershed["store"], watershed["settings"]
    with _client(watershed, "steward") as steward:
        for key, values in (("pii", ["L4"]), ("pii_type", ["email"])):
            answer = steward.put(f"/nodes/default.customers.email/tags/{key}", json={"values": values})
            assert answer.status_code == 200, answer.text
    propagate_locally(store, settings)
    with _client(watershed, "steward") as steward:

        def pii(column: str) -> list[str] | None:
            answer = steward.get(f"/nodes/{column}/tags")
            assert answer.status_code == 200, answer.text
            return next((t["values"] for t in answer.json()["tags"] if t["key"] == "pii"), None)

        assert pii("default.customer_orders.email") == ["L4"]
        # the policy's pseudonymised level (default policy: L1)
        assert pii("default.customers_hashed.email_hash") == ["L1"]
        assert pii("default.customers_hashed.country") is None
