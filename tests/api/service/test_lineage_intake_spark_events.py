"""The Spark listener's own events (recorded by R38 in tests/ingest/openlineage/events/, unedited)
through the intake on both backends, in the order they arrived and in reverse: the same graph; the
stale SQL facet of a DataFrame job is not taken for its lineage; the SQL job's reconcile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from watershed.api.service.lineage_intake import Intake
from watershed.api.service.lineage_reconcile import reconcile
from watershed.ingest.settings import IngestSettings

EVENTS = Path(__file__).parents[2] / "ingest" / "openlineage" / "events"
WAREHOUSE = "file:/tmp/watershed-openlineage-jobs/warehouse"
#: the tests' Spark session has no Hive: its catalog's tables are named under the warehouse's URI
SETTINGS = IngestSettings(openlineage_namespaces=[(WAREHOUSE, "table"), ("file", "path:fs")])
EDGES = (
    "MATCH (a:Column)-[r:FLOWS_TO]->(b:Column) RETURN r.task, a.id, b.id, r.kind, r.functions "
    "ORDER BY r.task, a.id, b.id"
)


def _events(name: str) -> list[dict]:
    return json.loads((EVENTS / name).read_text())


def _graph(store) -> list[list]:
    return store.read(EDGES)


@pytest.mark.parametrize("reverse", [False, True])
def test_the_recorded_jobs_load_the_same_in_any_order(backend_store, reverse):
    intake = Intake(backend_store, SETTINGS)
    events = [e for name in ("sql_job.json", "dataframe_job.json", "files_job.json") for e in _events(name)]
    for event in reversed(events) if reverse else events:
        intake.take(event, "spark_producer")
    edges = _graph(backend_store)
    hashed = [e for e in edges if e[2] == "default.customers_hashed.email_hash"]
    assert hashed and all(
        e[1:]
        == [
            "default.customers.email",
            "default.customers_hashed.email_hash",
            "expression",
            ["openlineage.masking"],
        ]
        for e in hashed
    )
    totals = [
        e[1:4] for e in edges if e[2].startswith("path:fs./tmp/watershed-openlineage-jobs/files/order_totals")
    ]
    assert [
        "default.orders.amount",
        "path:fs./tmp/watershed-openlineage-jobs/files/order_totals.total_amount",
        "aggregate",
    ] in totals
    sql_task = "spark-tests.`watershed_ol_jobs.adaptive_spark_plan.warehouse_customer_orders`"
    ((sql,),) = backend_store.read("MATCH (k:Task {id: $id}) RETURN k.sql", {"id": sql_task})
    assert sql.lstrip().upper().startswith("INSERT INTO CUSTOMER_ORDERS")


def test_a_stale_sql_facet_is_not_taken_for_the_jobs_lineage(backend_store):
    (event,) = _events("dataframe_job_stale_sql_facet.json")
    assert "customer_orders" in event["job"]["facets"]["sql"]["query"]
    Intake(backend_store, SETTINGS).take(event, "spark_producer")
    ((sql,),) = backend_store.read("MATCH (k:Task) RETURN k.sql")
    assert sql == ""
    targets = {row[2] for row in _graph(backend_store)}
    assert targets and all("customers_hashed" in target for target in targets)


def test_the_sql_jobs_reconcile(backend_store):
    intake = Intake(backend_store, SETTINGS)
    for event in _events("sql_job.json"):
        intake.take(event, "spark_producer")
    (task,) = reconcile(backend_store).tasks
    # what Watershed's extractor and the listener differ on for this job (docs/openlineage.md):
    # the listener also reports an inner join's keys as INDIRECT/FILTER (Spark's optimizer adds
    # isnotnull(key) filters for them); the SQL has them as join columns only
    assert (task.sql_only, task.kind_differs, task.agreed) == ([], [], 6)
    assert [(e.source, e.kind) for e in task.runtime_only] == [
        ("default.customers.customer_id", "weak:filter"),
        ("default.orders.customer_id", "weak:filter"),
    ]
